#!/usr/bin/env bash
# Latency bailiff adds to tools/call over Streamable HTTP, measured in the
# same run as its baseline (a Go SDK client calling the Go SDK test server
# directly). Timings are for reading, never for pass/fail.
#   bench/http.sh [calls]     (default 2000 calls per configuration)
# First one client, the log unsynced (durability none): the cost of the
# path itself. Then 1, 16 and 64 clients at once, each its own session,
# with the log and the evidence fsynced (durability sync, the default):
# what fsyncs and contention cost under load.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-2000}
out=$(go test ./proxy/ -run '^$' -bench '^BenchmarkHTTP(Direct|Gateway|Load)$' -benchtime "${n}x")
echo "$out" | grep -E '^(goos|goarch|cpu|Benchmark)'
echo
echo "$out" | awk '
/^Benchmark/ {
  name=$1; sub(/-[0-9]+$/, "", name); sub(/^BenchmarkHTTP/, "", name)
  for (i = 1; i <= NF; i++) {
    if ($i == "p50-µs") p50[name]=$(i-1)
    if ($i == "p99-µs") p99[name]=$(i-1)
    if ($i == "calls/s") cps[name]=$(i-1)
  }
}
END {
  d = p50["Direct"]; d99 = p99["Direct"]
  printf "%-36s %10s %10s %14s %14s %11s %11s\n", "path (one client, durability none)", "p50 µs", "p99 µs", "added p50 µs", "added p99 µs", "p50 ratio", "p99 ratio"
  printf "%-36s %10d %10d %14s %14s %10.2fx %10.2fx\n", "direct over HTTP (baseline)", d, d99, "-", "-", 1, 1
  g = p50["Gateway"]; g99 = p99["Gateway"]
  printf "%-36s %10d %10d %14d %14d %10.2fx %10.2fx\n", "bailiff, HTTP both sides", g, g99, g-d, g99-d99, g/d, g99/d99
  printf "\n%-8s %-14s %10s %10s %14s %14s %10s %10s\n", "clients", "path", "p50 µs", "p99 µs", "added p50 µs", "added p99 µs", "calls/s", "vs direct"
  split("1 16 64", cs, " ")
  for (k = 1; k <= 3; k++) {
    c = cs[k]; dn = "Load/direct/clients=" c; gn = "Load/gateway-sync/clients=" c
    printf "%-8s %-14s %10d %10d %14s %14s %10.0f %10s\n", c, "direct", p50[dn], p99[dn], "-", "-", cps[dn], "1.00x"
    printf "%-8s %-14s %10d %10d %14d %14d %10.0f %9.2fx\n", c, "bailiff sync", p50[gn], p99[gn], p50[gn]-p50[dn], p99[gn]-p99[dn], cps[gn], cps[gn]/cps[dn]
  }
  printf "\naim at 64 clients with sync: added p50 <= 1 ms, added p99 <= 10 ms (docs/decisions.md, Group commit)\n"
  a50 = p50[gn] - p50[dn]; a99 = p99[gn] - p99[dn]
  printf "  added p50: %s (%.1f ms)\n", (a50 <= 1000) ? "met" : "NOT met", a50 / 1000
  printf "  added p99: %s (%.1f ms)\n", (a99 <= 10000) ? "met" : "NOT met", a99 / 1000
}'
