#!/usr/bin/env bash
# Old (before the epilogues) and new decode_step_bench, alternating, order swapped every
# round: one-token and 9-token steps, bf16 (path 0, dpbf16 here) and int8 (path 3), 2 threads.
# usage: steps_ab.sh OLD_DIR NEW_DIR ROUNDS
set -euo pipefail
old=$1 new=$2 rounds=${3:-4}
filter='BM_Step/path:(0|3)/tokens:(1|9|16)/'
for ((i = 1; i <= rounds; i++)); do
  if ((i % 2)); then order="old new"; else order="new old"; fi
  for which in $order; do
    dir=$old; [[ $which == new ]] && dir=$new
    "$dir/decode_step_bench" --benchmark_filter="$filter" 2>/dev/null | grep '^BM_Step' |
      awk -v w="$which" -v r="$i" '{print "round " r " " w " " $1 " " $2 " " $3}'
  done
done
