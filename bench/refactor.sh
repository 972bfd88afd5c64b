#!/usr/bin/env bash
# A refactor against the revision before it, in one run: full verify and
# shadow over the same generated log by both builds, interleaved (the
# best seconds of five rounds, and the new build's ratio to the old:
# above 1.00x is slower), then the exported
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

# pair ARGS...: the best wall seconds of base and head over five rounds,
# each round running base then head, so that a machine that slows down
# or speeds up during the run weighs on both alike.
pair() {
  local bb="" hb="" t0 t1 s bin
  for _ in 1 2 3 4 5; do
    for bin in base head; do
      t0=$(date +%s.%N); "$dir/bailiff-$bin" "$@" > /dev/null; t1=$(date +%s.%N)
      s=$(echo "$t1 - $t0" | bc -l)
      if [ $bin = base ]; then
        if [ -z "$bb" ] || [ "$(echo "$s < $bb" | bc -l)" = 1 ]; then bb=$s; fi
      elif [ -z "$hb" ] || [ "$(echo "$s < $hb" | bc -l)" = 1 ]; then hb=$s; fi
    done
  done
  echo "$bb $hb"
}

printf 'log: %s bytes; base %s, head %s%s\n\n' "$(stat -c %s "$log")" "$(git rev-parse --short "$base")" "$(git rev-parse --short HEAD)" "$(git diff --quiet HEAD || echo " with uncommitted changes")"
printf '%-16s %12s %12s %12s\n' run "base s" "head s" "head/base"
for job in verify shadow; do
  case $job in
    verify) args=(verify "$log") ;;
    shadow) args=(shadow --candidate "$dir/candidate.yaml" "$log") ;;
  esac
  read -r b h < <(pair "${args[@]}")
  awk -v j="$job" -v b="$b" -v h="$h" 'BEGIN { printf "%-16s %12.2f %12.2f %11.2fx\n", j, b, h, h/b }'
done

printf '\nexported names, base then head:\n'
join -a 1 -a 2 -e 0 -o 0,1.2,1.3,2.2,2.3 <(go run ./bench/exports "$tree" | tail -n +2 | sort) <(go run ./bench/exports . | tail -n +2 | sort) |
  awk 'BEGIN { printf "%-24s %15s %15s\n", "package", "top-level", "all" }
       { printf "%-24s %7d -> %-5d %7d -> %-5d\n", $1, $2, $4, $3, $5 }'
