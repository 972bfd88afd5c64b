#!/usr/bin/env bash
# Engine speed, as ratios against a baseline measured in the same run: a
# plain substring scan of the same 100 MB of session output. Timings are
# for reading, never for pass/fail.
#   bench/engine.sh [benchtime]     (default 2s)
set -euo pipefail
cd "$(dirname "$0")/.."
benchtime=${1:-2s}
out=$(go test ./engine/ -run '^$' -bench 'DecideRules|DecideGlob|DecideTrusted|LongValues|Taint|BaselineScan|AddOutput' -benchtime "$benchtime" -benchmem)
echo "$out" | grep -E '^(goos|goarch|cpu|Benchmark)'
echo
echo "$out" | awk '
/^Benchmark/ { name=$1; sub(/-[0-9]+$/, "", name); ns[name]=$3 }
END {
  base = ns["BenchmarkBaselineScan100MB"]
  printf "%-34s %14s %12s\n", "decision", "ns/op", "vs scan"
  n = split("BenchmarkDecideRules BenchmarkDecideGlobContracts BenchmarkDecideTrustedDestinations BenchmarkLongValues BenchmarkTaintEmail1MB BenchmarkTaintEmail100MB BenchmarkTaintMiss100MB BenchmarkTaintScan1MB BenchmarkTaintScan100MB BenchmarkTaintFound100MB BenchmarkTaintFound100MBSpilled BenchmarkAddOutput", order, " ")
  for (i = 1; i <= n; i++) {
    k = order[i]; label = k; sub(/^Benchmark/, "", label)
    printf "%-34s %14.0f %11.4fx\n", label, ns[k], ns[k] / base
  }
  printf "%-34s %14.0f %11.4fx\n", "plain scan of 100 MB", base, 1
  printf "\naim: DecideRules <= 500 ns; a taint check against 100 MB <= 5 ms\n"
}'
