#!/usr/bin/env bash
# Audit-log verify speed, as ratios against sha256sum over the same file
# measured in the same run, and peak memory. Timings are for reading,
# never for pass/fail.
#   bench/verify.sh [bytes]     (default 1073741824: a 1 GiB log)
# The log is generated once under bench/out/ and reused while its size
# matches.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
size=${1:-1073741824}
dir=bench/out
mklog "$size"
go build -o "$dir/bailiff" ./cmd/bailiff
bytes=$(stat -c %s "$log")
# Read the file once so every run starts from the page cache.
cat "$log" > /dev/null

read -r sha_s sha_rss < <(time_of sha256sum "$log")
read -r int_s int_rss < <(time_of "$dir/bailiff" verify --integrity-only "$log")
read -r full_s full_rss < <(time_of "$dir/bailiff" verify "$log")

awk -v b="$bytes" -v s="$sha_s" -v i="$int_s" -v f="$full_s" -v sr="$sha_rss" -v ir="$int_rss" -v fr="$full_rss" 'BEGIN {
  printf "log: %.0f MB (%d bytes)\n", b/1e6, b
  if (b < 64e6) printf "(under 64 MB, starting the processes is much of each time: the ratios say little)\n"
  printf "\n"
  printf "%-26s %9s %10s %14s %12s\n", "run", "seconds", "MB/s", "vs sha256sum", "peak RSS MB"
  printf "%-26s %9.2f %10.0f %13.2fx %12.1f\n", "sha256sum (baseline)", s, b/1e6/s, 1, sr/1024
  printf "%-26s %9.2f %10.0f %13.2fx %12.1f\n", "verify --integrity-only", i, b/1e6/i, s/i, ir/1024
  printf "%-26s %9.2f %10.0f %13.2fx %12.1f\n", "verify (full)", f, b/1e6/f, s/f, fr/1024
  printf "\naim: integrity and full both >= 1.0x sha256sum, peak RSS < 100 MB at any size (docs/decisions.md, Offline speed)\n"
  printf "  integrity-only: %s (%.2fx, %.0f MB)\n", (s/i >= 1 && ir/1024 < 100) ? "met" : "NOT met", s/i, ir/1024
  printf "  full:           %s (%.2fx, %.0f MB)\n", (s/f >= 1 && fr/1024 < 100) ? "met" : "NOT met", s/f, fr/1024
}'
