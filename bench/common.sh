# Sourced by the bench scripts: the generated log they share and the
# candidate policy shadow is scored with.

# mklog SIZE: the generated log of about SIZE bytes under bench/out, made
# once and reused while its size matches; sets $log.
mklog() {
  log=bench/out/audit-$1.jsonl
  mkdir -p bench/out
  if [ ! -f "$log" ]; then
    echo "generating a log of $1 bytes in $log ..."
    rm -rf "$log.evidence"
    go run ./bench/genlog -size "$1" -o "$log"
  fi
}

# mkcandidate: bench/out/candidate.yaml, a candidate that no longer trusts
# the corporate domain, so every send asks.
mkcandidate() {
  mkdir -p bench/out
  cat > bench/out/candidate.yaml <<'YAML'
version: 1
rules:
  - {id: read, tool: get_recent_messages, action: allow}
  - {id: send, tool: send_email, action: allow}
tools:
  send_email:
    exfiltrating: true
    sink_params: [to, cc]
YAML
}

# time_of CMD...: wall seconds and peak RSS (KiB) of one run.
time_of() {
  local t0 t1 rss
  t0=$(date +%s.%N)
  rss=$( { /usr/bin/time -f '%M' "$@" > /dev/null; } 2>&1 | tail -n 1)
  t1=$(date +%s.%N)
  echo "$(echo "$t1 - $t0" | bc -l) $rss"
}
