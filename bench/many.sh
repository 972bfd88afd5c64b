#!/usr/bin/env bash
# Many logs against one: verify and shadow over N logs of SIZE/N bytes
# each, and over one log of SIZE bytes, in the same run. The N logs come
# in two shapes:
#   one after another: each log's sessions at times of their own, as
#     gateways that took turns. Only the per-log setup differs from the
#     one log: many/one should stay near 1.0x, in the same memory.
#   side by side: every log over the same hours, as N gateways running
#     at once. N sessions are open together, and verify holds each one's
#     history (the taint index), so memory grows with N: it is bounded by
#     the sessions open at once, not by the logs' size.
# Timings are for reading, never for pass/fail.
#   bench/many.sh [size] [n]    (default 1073741824 and 100: 100 logs of
#                                10 MB against one of 1 GiB)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
size=${1:-1073741824}
n=${2:-100}
dir=bench/out
one=$dir/many-$size-1
apart=$dir/many-$size-$n-apart
together=$dir/many-$size-$n
go build -o "$dir/genlog" ./bench/genlog
# gen DIR COUNT STEP: COUNT logs of size/COUNT bytes in DIR, made once, the
# k-th starting STEP*k hours in. Each has session ids of its own: one
# session in two logs is refused (it would be counted twice).
gen() {
  local d=$1 k=$2 step=$3 i
  [ -f "$d/done" ] && return 0
  rm -rf "$d"; mkdir -p "$d"
  echo "generating $k log(s) of $((size / k)) bytes in $d ..."
  for i in $(seq -w 1 "$k"); do
    "$dir/genlog" -size $((size / k)) -prefix "l${i}s" -start $((step * (10#$i - 1))) -o "$d/audit-$i.jsonl"
  done
  touch "$d/done"
}
gen "$one" 1 0
gen "$apart" "$n" 100000
gen "$together" "$n" 0
mkcandidate
go build -o "$dir/bailiff" ./cmd/bailiff
cat "$one"/*.jsonl "$apart"/*.jsonl "$together"/*.jsonl > /dev/null # from the page cache, all

printf '%-40s %9s %9s %12s\n' "run" "seconds" "vs 1 log" "peak RSS MB"
# row NAME BASE CMD...: one timed run, and its ratio to BASE seconds.
row() {
  local name=$1 base=$2 s r
  shift 2
  read -r s r < <(time_of "$@")
  [ "$base" = - ] && base=$s
  awk -v n="$name" -v s="$s" -v b="$base" -v r="$r" 'BEGIN { printf "%-40s %9.2f %8.2fx %12.1f\n", n, s, s/b, r/1024 }'
  last=$s rss=$r
}
row "verify, 1 log" - "$dir/bailiff" verify "$one"/*.jsonl
v1=$last
row "verify, $n logs one after another" "$v1" "$dir/bailiff" verify "$apart"/*.jsonl
va=$last; vr=$rss
row "verify, $n logs side by side" "$v1" "$dir/bailiff" verify "$together"/*.jsonl
row "shadow, 1 log" - "$dir/bailiff" shadow --candidate "$dir/candidate.yaml" "$one"/*.jsonl
s1=$last
row "shadow, $n logs one after another" "$s1" "$dir/bailiff" shadow --candidate "$dir/candidate.yaml" "$apart"/*.jsonl
sa=$last; sr=$rss
row "shadow, $n logs side by side" "$s1" "$dir/bailiff" shadow --candidate "$dir/candidate.yaml" "$together"/*.jsonl
printf '\naim: %d logs one after another at most 1.0x one log, peak RSS under 100 MB; side by side, memory bounded by the sessions open at once\n' "$n"
awk -v va="$va" -v v1="$v1" -v vr="$vr" -v sa="$sa" -v s1="$s1" -v sr="$sr" 'BEGIN {
  printf "  verify, one after another: %s (%.2fx, %.0f MB)\n", (va <= v1 && vr/1024 < 100) ? "met" : "NOT met", va/v1, vr/1024
  printf "  shadow, one after another: %s (%.2fx, %.0f MB)\n", (sa <= s1 && sr/1024 < 100) ? "met" : "NOT met", sa/s1, sr/1024
}'
