#!/usr/bin/env bash
# shadow and ablate over an audit log of about a million calls (the same
# generated log bench/verify.sh uses): calls per second, and peak memory,
# which must stay bounded by the sessions open at once, not by the log.
# Timings are for reading, never for pass/fail.
#   bench/shadow.sh [bytes]     (default 1073741824: about 1 million calls)
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-1073741824}
dir=bench/out
. bench/common.sh
mklog "$size"
mkcandidate
go build -o "$dir/bailiff" ./cmd/bailiff
calls=$(grep -c '"kind":"call"' "$log")

# run NAME CMD...: wall seconds and peak RSS of one run.
run() {
  local name=$1; shift
  local t0 t1 rss
  t0=$(date +%s.%N)
  rss=$( { /usr/bin/time -f '%M' "$@" > /dev/null; } 2>&1 | tail -n 1)
  t1=$(date +%s.%N)
  secs=$(echo "$t1 - $t0" | bc -l)
  awk -v n="$name" -v s="$secs" -v c="$calls" -v r="$rss" \
    'BEGIN { printf "%-30s %9.2f %14.0f %12.1f\n", n, s, c/s, r/1024 }'
}
printf 'log: %s calls\n\n%-30s %9s %14s %12s\n' "$calls" "run" "seconds" "calls/s" "peak RSS MB"
run "shadow (recorded vs candidate)" "$dir/bailiff" shadow --candidate "$dir/candidate.yaml" "$log"
shadow_secs=$secs
run "ablate (7 checks)" "$dir/bailiff" ablate "$log"
awk -v a="$secs" -v s="$shadow_secs" -v c="$calls" 'BEGIN {
  printf "\nablate / one shadow pass: %.2fx\n", a/s
  printf "\naim: shadow at 150,000 calls/s or more, ablate at most 1.2x one shadow pass; memory bounded by open sessions and the changed-call batch (under 100 MB)\n"
  printf "  shadow: %s (%.0f calls/s)\n", (c/s >= 150000) ? "met" : "NOT met", c/s
  printf "  ablate: %s (%.2fx)\n", (a/s <= 1.2) ? "met" : "NOT met", a/s
}'
