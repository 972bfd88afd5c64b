#!/usr/bin/env bash
# The cost of checking a token (every HTTP request with identity pays it),
# as ratios against go-jose's bare signature check of the same token,
# measured in the same run. Timings are for reading, never for pass/fail.
#   bench/identity.sh [benchtime]     (default 2s)
set -euo pipefail
cd "$(dirname "$0")/.."
benchtime=${1:-2s}
out=$(go test ./identity/ -run '^$' -bench 'Verify|BaselineJose' -benchtime "$benchtime" -benchmem)
echo "$out" | grep -E '^(goos|goarch|cpu|Benchmark)'
echo
echo "$out" | awk '
/^Benchmark/ { name=$1; sub(/-[0-9]+$/, "", name); ns[name]=$3 }
END {
  printf "%-12s %14s %14s %10s\n", "algorithm", "verify ns/op", "bare ns/op", "ratio"
  n = split("RS256 ES256", algs, " ")
  for (i = 1; i <= n; i++) {
    a = algs[i]; v = ns["BenchmarkVerify" a]; base = ns["BenchmarkBaselineJose" a]
    printf "%-12s %14.0f %14.0f %9.2fx\n", a, v, base, v / base
  }
  printf "\naim: the checks around the signature cost less than the signature (ratio < 2)\n"
}'
