#!/usr/bin/env bash
# Memory and time of verify (and shadow) on one session holding a lot of tool output
# (default about 144 MB), next to sha256sum over the same files (the log
# and its evidence) measured in the same run. Timings and ratios are for
# reading, never for pass/fail; the peak RSS bound is held by
# TestVerifyLargeSessionMemory in cmd/bailiff.
#   bench/verify-large.sh [output-bytes] [bailiff-binary]
# The second argument runs another build of bailiff (an older one, to
# compare) on the same log.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
size=${1:-144000000}
dir=bench/out
log=$dir/large-$size.jsonl
mkdir -p "$dir"
go build -o "$dir/bailiff" ./cmd/bailiff
bin=${2:-$dir/bailiff}
if [ ! -f "$log" ]; then
  echo "generating one session with $size bytes of output in $log ..."
  rm -rf "$log.evidence"
  go run ./bench/genlog -session-output "$size" -o "$log"
fi
bytes=$(du -cb "$log" "$log.evidence" | tail -n 1 | cut -f1)
# Read the files once so every run starts from the page cache.
cat "$log" "$log.evidence"/* > /dev/null

read -r sha_s sha_rss < <(time_of sh -c "cat '$log' '$log.evidence'/* | sha256sum")
read -r v_s v_rss < <(time_of "$bin" verify "$log")
# shadow drives the same session under two policies at once.
cat > "$dir/large-candidate.yaml" <<'YAML'
version: 1
rules:
  - {id: read, tool: get_recent_messages, action: allow}
  - {id: send, tool: send_email, action: allow}
  - {id: post, tool: post_message, action: allow}
tools:
  send_email: {exfiltrating: true, sink_params: [to, cc]}
  post_message: {exfiltrating: true, sink_params: [channel]}
YAML
read -r s_s s_rss < <(time_of "$bin" shadow --candidate "$dir/large-candidate.yaml" "$log")

awk -v b="$bytes" -v s="$sha_s" -v f="$v_s" -v sr="$sha_rss" -v fr="$v_rss" -v g="$s_s" -v gr="$s_rss" -v bin="$bin" 'BEGIN {
  printf "log and evidence: %.0f MB, one session (%s)\n\n", b/1e6, bin
  printf "%-26s %9s %10s %14s %12s\n", "run", "seconds", "MB/s", "time vs sha", "peak RSS MB"
  printf "%-26s %9.2f %10.0f %13.2fx %12.1f\n", "sha256sum (baseline)", s, b/1e6/s, 1, sr/1024
  printf "%-26s %9.2f %10.0f %13.2fx %12.1f\n", "verify", f, b/1e6/f, f/s, fr/1024
  printf "%-26s %9.2f %10.0f %13.2fx %12.1f\n", "shadow", g, b/1e6/g, g/s, gr/1024
  printf "\naim: peak RSS < 100 MB at any session size; time linear in the output\n"
}'
