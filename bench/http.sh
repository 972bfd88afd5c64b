#!/usr/bin/env bash
# Latency bailiff adds to one tools/call over Streamable HTTP: a Go SDK
# client calling the Go SDK test server directly, against the same client
# and server with bailiff gateway --listen in front and the server as its
# HTTP upstream (durability none), measured in the same run. Timings are
# for reading, never for pass/fail.
#   bench/http.sh [calls]     (default 2000 calls per configuration)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-2000}
out=$(go test ./proxy/ -run '^$' -bench '^BenchmarkHTTP(Direct|Gateway)$' -benchtime "${n}x")
echo "$out" | grep -E '^(goos|goarch|cpu|Benchmark)'
echo
echo "$out" | awk '
/^Benchmark/ {
  name=$1; sub(/-[0-9]+$/, "", name); sub(/^BenchmarkHTTP/, "", name)
  for (i = 1; i <= NF; i++) { if ($i == "p50-µs") p50[name]=$(i-1); if ($i == "p99-µs") p99[name]=$(i-1) }
}
END {
  d = p50["Direct"]; d99 = p99["Direct"]
  printf "%-28s %10s %10s %14s %14s %11s %11s\n", "path", "p50 µs", "p99 µs", "added p50 µs", "added p99 µs", "p50 ratio", "p99 ratio"
  printf "%-28s %10d %10d %14s %14s %10.2fx %10.2fx\n", "direct over HTTP (baseline)", d, d99, "-", "-", 1, 1
  g = p50["Gateway"]; g99 = p99["Gateway"]
  printf "%-28s %10d %10d %14d %14d %10.2fx %10.2fx\n", "bailiff, HTTP both sides", g, g99, g-d, g99-d99, g/d, g99/d99
}'
