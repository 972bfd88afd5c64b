#!/usr/bin/env bash
# A refactor against the revision before it, in one run: full verify and
# shadow over the same generated log by both builds (seconds, and the new
# build's ratio to the old: above 1.00x is slower), then the exported
# names of each package in both trees. Timings are for reading, never
# for pass/fail.
#   bench/refactor.sh BASE [bytes]    (default 268435456: a 256 MiB log)
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: bench/refactor.sh BASE-REVISION [bytes]}
size=${2:-268435456}
dir=bench/out
. bench/common.sh
mklog "$size"
mkcandidate
tree=$(mktemp -d)
trap 'git worktree remove --force "$tree" >/dev/null 2>&1 || rm -rf "$tree"' EXIT
git worktree add --detach "$tree" "$base" >/dev/null 2>&1
(cd "$tree" && go build -o "$OLDPWD/$dir/bailiff-base" ./cmd/bailiff)
go build -o "$dir/bailiff-head" ./cmd/bailiff
cat "$log" > /dev/null

# secs CMD...: wall seconds of the best of three runs.
secs() {
  local best="" t0 t1 s
  for _ in 1 2 3; do
    t0=$(date +%s.%N); "$@" > /dev/null; t1=$(date +%s.%N)
    s=$(echo "$t1 - $t0" | bc -l)
    if [ -z "$best" ] || [ "$(echo "$s < $best" | bc -l)" = 1 ]; then best=$s; fi
  done
  echo "$best"
}

printf 'log: %s bytes; base %s, head %s%s\n\n' "$(stat -c %s "$log")" "$(git rev-parse --short "$base")" "$(git rev-parse --short HEAD)" "$(git diff --quiet HEAD || echo " with uncommitted changes")"
printf '%-16s %12s %12s %12s\n' run "base s" "head s" "head/base"
for job in verify shadow; do
  case $job in
    verify) args=(verify "$log") ;;
    shadow) args=(shadow --candidate "$dir/candidate.yaml" "$log") ;;
  esac
  b=$(secs "$dir/bailiff-base" "${args[@]}")
  h=$(secs "$dir/bailiff-head" "${args[@]}")
  awk -v j="$job" -v b="$b" -v h="$h" 'BEGIN { printf "%-16s %12.2f %12.2f %11.2fx\n", j, b, h, h/b }'
done

printf '\nexported names, base then head:\n'
join -a 1 -a 2 -e 0 -o 0,1.2,1.3,2.2,2.3 <(go run ./bench/exports "$tree" | tail -n +2 | sort) <(go run ./bench/exports . | tail -n +2 | sort) |
  awk 'BEGIN { printf "%-24s %15s %15s\n", "package", "top-level", "all" }
       { printf "%-24s %7d -> %-5d %7d -> %-5d\n", $1, $2, $4, $3, $5 }'
