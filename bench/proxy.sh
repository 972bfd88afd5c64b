#!/usr/bin/env bash
# Latency bailiff run adds to one tools/call, against the same client
# calling the same server directly, measured in the same run, with the
# audit log unsynced (--durability none) and synced (sync, the default),
# and synced under a tenant ceiling and a rate kept in the state database
# (every call then takes the counters' lock and saves them), and unsynced
# with telemetry on (every call traced, its span and upstream child
# exported over OTLP/HTTP to a receiver in the process, and counted in
# the metrics) beside the same without it.
# Timings are for reading, never for pass/fail.
#   bench/proxy.sh [calls]     (default 2000 calls per configuration)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-2000}
out=$(go test ./proxy/ -run '^$' -bench 'Call(Direct|ProxyNone|ProxySync|ProxyTenants|ProxyTraced)$' -benchtime "${n}x")
echo "$out" | grep -E '^(goos|goarch|cpu|Benchmark)'
echo
echo "$out" | awk '
/^Benchmark/ {
  name=$1; sub(/-[0-9]+$/, "", name); sub(/^BenchmarkCall/, "", name)
  for (i = 1; i <= NF; i++) { if ($i == "p50-µs") p50[name]=$(i-1); if ($i == "p90-µs") p90[name]=$(i-1) }
}
END {
  d = p50["Direct"]
  printf "%-26s %10s %10s %14s %12s\n", "path", "p50 µs", "p90 µs", "added p50 µs", "vs direct"
  printf "%-26s %10d %10d %14s %11.2fx\n", "direct (baseline)", d, p90["Direct"], "-", 1
  printf "%-26s %10d %10d %14d %11.2fx\n", "bailiff, durability none", p50["ProxyNone"], p90["ProxyNone"], p50["ProxyNone"]-d, p50["ProxyNone"]/d
  printf "%-26s %10d %10d %14d %11.2fx\n", "bailiff, durability sync", p50["ProxySync"], p90["ProxySync"], p50["ProxySync"]-d, p50["ProxySync"]/d
  printf "%-26s %10d %10d %14d %11.2fx\n", "sync, tenant ceiling+rate", p50["ProxyTenants"], p90["ProxyTenants"], p50["ProxyTenants"]-d, p50["ProxyTenants"]/d
  printf "%-26s %10d %10d %14d %11.2fx\n", "none, traced + metrics", p50["ProxyTraced"], p90["ProxyTraced"], p50["ProxyTraced"]-d, p50["ProxyTraced"]/d
  printf "\ntelemetry on adds %d µs at p50 (%d at p90) to the untraced path, durability none both\n", p50["ProxyTraced"]-p50["ProxyNone"], p90["ProxyTraced"]-p90["ProxyNone"]
  printf "\naim: under 300 µs added at p50 with durability none, under 400 µs with sync\n"
}'
