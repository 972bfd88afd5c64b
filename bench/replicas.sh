#!/usr/bin/env bash
# What replicas sharing PostgreSQL cost: the same bounded load from 64
# clients at once straight to a server, through one gateway, and through
# two replicas sharing one tenant budget (and the same two without tenant
# limits, which take no shared counters); p50, p99 and throughput of each,
# and what bailiff adds against the direct calls, in one run. Starts a
# throwaway PostgreSQL cluster unless $BAILIFF_TEST_POSTGRES names one.
# Timings are for reading, never for pass/fail.
#   bench/replicas.sh [calls] [clients]     (default 4000 calls, 64 clients)
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/out
go build -o bench/out/bailiff ./cmd/bailiff
go build -o bench/out/sdkserver ./proxy/testdata/sdkserver
started=""
if [ -z "${BAILIFF_TEST_POSTGRES:-}" ]; then
  eval "$(.ci/postgres start)"
  started=$BAILIFF_PG_DIR
  trap '.ci/postgres stop "$started"' EXIT
fi
# A schema of its own, so the counters start empty.
schema=bench_$$
psql -q "$BAILIFF_TEST_POSTGRES" -c "CREATE SCHEMA $schema" >/dev/null
trap 'psql -q "$BAILIFF_TEST_POSTGRES" -c "SET client_min_messages = warning; DROP SCHEMA $schema CASCADE" >/dev/null; if [ -n "$started" ]; then .ci/postgres stop "$started"; fi' EXIT
sep='?'; case "$BAILIFF_TEST_POSTGRES" in *\?*) sep='&';; esac
go run ./bench/replicas -calls "${1:-4000}" -clients "${2:-64}" -postgres "$BAILIFF_TEST_POSTGRES${sep}search_path=$schema"
