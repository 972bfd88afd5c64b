#!/usr/bin/env bash
# What the state database costs a call, as ratios against a bare fsync of
# the same size measured in the same run: spending a grant (one immediate
# transaction, fsynced; only a call an approval out of band allows pays
# it), the look every call takes for answers given since (a pragma), and
# the query it runs when one was (200 asks waiting). Timings are for
# reading, never for pass/fail.
#   bench/state.sh [benchtime]     (default 2s)
set -euo pipefail
cd "$(dirname "$0")/.."
benchtime=${1:-2s}
out=$(go test ./state/ -run '^$' -bench 'UseGrant|AnswersVersion|Carryable|BaselineFsync' -benchtime "$benchtime")
echo "$out" | grep -E '^(goos|goarch|cpu|Benchmark)'
echo
echo "$out" | awk '
/^Benchmark/ { name=$1; sub(/-[0-9]+$/, "", name); ns[name]=$3 }
END {
  base = ns["BenchmarkBaselineFsync"]
  printf "%-18s %12s %10s\n", "operation", "ns/op", "vs fsync"
  n = split("UseGrant AnswersVersion Carryable", ops, " ")
  for (i = 1; i <= n; i++) {
    v = ns["Benchmark" ops[i]]
    printf "%-18s %12.0f %9.2fx\n", ops[i], v, v / base
  }
  printf "%-18s %12.0f\n", "fsync (baseline)", base
  printf "\naim: spending a grant costs about one fsync (ratio near 1); the per-call look is far below one\n"
}'
