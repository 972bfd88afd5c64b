#!/usr/bin/env bash
# Verify speed on the log of a busy gateway: many short sessions, each
# with four distinct outputs of about 2 KB (default about 300 MB of log and
# as much evidence), as ratios against sha256sum over the same files in
# the same run, with peak memory and the evidence store's disk use.
# Timings are for reading, never for pass/fail.
#   bench/verify-small.sh [bytes] [bailiff-binary]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
size=${1:-300000000}
dir=bench/out
log=$dir/small-$size.jsonl
mkdir -p "$dir"
go build -o "$dir/bailiff" ./cmd/bailiff
bin=${2:-$dir/bailiff}
if [ ! -f "$log" ]; then
  echo "generating a log of $size bytes of short sessions in $log ..."
  rm -rf "$log.evidence"
  go run ./bench/genlog -small -size "$size" -o "$log"
fi
ev=$log.evidence
if ! ls "$ev"/pack-*.index > /dev/null 2>&1; then
  echo "$ev holds no packs (made before packs?): remove $log and run again" >&2
  exit 1
fi
# The timings below mean nothing unless the log verifies.
if ! "$bin" verify "$log" > /dev/null; then
  echo "bailiff verify $log fails: remove $log and run again" >&2
  exit 1
fi
logb=$(stat -c %s "$log")
evb=$(du -cb "$ev" | tail -n 1 | cut -f1)
disk=$(du -cB1 "$ev" | tail -n 1 | cut -f1)
# Raw output bytes: a pack's bytes less its header and each entry's head
# (40 bytes); an index has a 25-byte header and 48 bytes an entry.
raw=$(for i in "$ev"/pack-*.index; do
  d=${i%.index}.data
  echo "$(stat -c %s "$d") $(stat -c %s "$i")"
done | awk '{ n = ($2 - 25) / 48; raw += $1 - 24 - 40 * n; c += n } END { printf "%d %d", raw, c }')
read -r raw outputs <<< "$raw"
# Read the files once so every run starts from the page cache.
cat "$log" "$ev"/* > /dev/null

read -r sha_s sha_rss < <(time_of sha256sum "$log")
read -r shaall_s shaall_rss < <(time_of sh -c "cat '$log' '$ev'/* | sha256sum")
read -r int_s int_rss < <(time_of "$bin" verify --integrity-only "$log")
read -r full_s full_rss < <(time_of "$bin" verify "$log")

awk -v b="$logb" -v e="$evb" -v disk="$disk" -v raw="$raw" -v n="$outputs" -v s="$sha_s" -v a="$shaall_s" -v i="$int_s" -v f="$full_s" \
  -v sr="$sha_rss" -v ir="$int_rss" -v fr="$full_rss" -v bin="$bin" 'BEGIN {
  printf "log: %.0f MB; evidence: %d outputs, %.0f MB raw, %.0f MB on disk (%.3fx raw) (%s)\n\n", b/1e6, n, raw/1e6, disk/1e6, disk/raw, bin
  printf "%-34s %9s %14s %12s\n", "run", "seconds", "speed vs sha", "peak RSS MB"
  printf "%-34s %9.2f %13.2fx %12.1f\n", "sha256sum of the log (baseline)", s, 1, sr/1024
  printf "%-34s %9.2f %13.2fx %12s\n", "sha256sum of the log and evidence", a, s/a, "-"
  printf "%-34s %9.2f %13.2fx %12.1f\n", "verify --integrity-only", i, s/i, ir/1024
  printf "%-34s %9.2f %13.2fx %12.1f\n", "verify (full)", f, s/f, fr/1024
  printf "\nspeed vs sha: the baseline'"'"'s seconds over the run'"'"'s (higher is faster)\n"
  printf "aim: full >= 1.0x sha256sum of the log, peak RSS < 100 MB, store on disk <= 1.1x raw\n"
}'
