#!/usr/bin/env bash
# Linear growth: verify's and shadow's time per byte over logs from 1 MB
# to MAX bytes (each four times the last), and over logs of one size cut
# into 1 to 10,000 sessions. The ns/byte columns should stay flat down
# each table. Timings are for reading, never for pass/fail.
#   bench/growth.sh [max] [size]   (defaults 1073741824, the largest log,
#                                   and 67108864, the session-count log)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
max=${1:-1073741824}
fixed=${2:-67108864}
dir=bench/out/growth
mkdir -p "$dir"
mkcandidate
go build -o bench/out/genlog ./bench/genlog
go build -o bench/out/bailiff ./cmd/bailiff
bin=bench/out/bailiff

# gen NAME SIZE PAIRS: a log of SIZE bytes, sessions of PAIRS read-and-send pairs.
gen() {
  local f=$dir/$1.jsonl
  if [ ! -f "$f" ]; then
    rm -rf "$f.evidence"
    # A log cut short by a failure is not left to be taken as made.
    bench/out/genlog -size "$2" -calls "$3" -o "$f" >&2 || { rm -rf "$f" "$f.evidence"; exit 1; }
  fi
  cat "$f" > /dev/null
  echo "$f"
}

# measure LABEL FILE: one row, ns per byte of verify and shadow.
measure() {
  local f=$2 bytes sessions vs vr ss sr
  bytes=$(stat -c %s "$f")
  sessions=$(grep -c '"kind":"session",' "$f" || true)
  read -r vs vr < <(time_of "$bin" verify "$f")
  read -r ss sr < <(time_of "$bin" shadow --candidate bench/out/candidate.yaml "$f")
  awk -v l="$1" -v b="$bytes" -v n="$sessions" -v vs="$vs" -v vr="$vr" -v ss="$ss" -v sr="$sr" 'BEGIN {
    printf "%-12s %10.0f %9d %11.1f %9.1f %11.1f %9.1f\n", l, b/1e6, n, vs*1e9/b, vr/1024, ss*1e9/b, sr/1024 }'
}
header() {
  printf '%-12s %10s %9s %11s %9s %11s %9s\n' "$1" "MB" "sessions" "verify ns/B" "RSS MB" "shadow ns/B" "RSS MB"
}

header "log size"
s=1048576
while [ "$s" -le "$max" ]; do
  measure "$((s / 1048576)) MB" "$(gen size-$s "$s" 500)"
  s=$((s * 4))
done

echo
header "sessions"
# About 2 KB a read-and-send pair: a session count is the fixed size cut
# into that many sessions.
for k in 1 10 100 1000 10000; do
  pairs=$((fixed / 2100 / k))
  [ "$pairs" -lt 1 ] && pairs=1
  measure "$k" "$(gen sessions-$fixed-$k "$fixed" "$pairs")"
done
printf '\naim: each ns/B column flat (linear growth) from 1 MB to %s bytes and from 1 to 10,000 sessions\n' "$max"
