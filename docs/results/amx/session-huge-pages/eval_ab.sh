#!/bin/bash
# dspark eval (greedy, adaptive, 20 prompts per file; session-int8-amx/eval_speed.sh) before / after,
# A B B A, each run measuring its own step-cost table first (--reprofile), for the paths
# session-spread-prefetch/eval_reprofile_ab.sh leaves out: the CPU's defaults and --isa avx2.
#   eval_ab.sh DSPARK_BEFORE DSPARK_AFTER OUT_DIR   (repository root; nothing else running)
A=$1; B=$2; OUT=$3; D=$(dirname "$0"); mkdir -p "$OUT"
for config in "defaults" "avx2 --isa avx2"; do
  set -- $config; name=$1; shift
  n=0
  for arm in before after after before; do
    n=$((n + 1))
    if [[ $arm == before ]]; then bin=$A; else bin=$B; fi
    bash "$D/../session-int8-amx/eval_speed.sh" "$bin" "$OUT/eval_${name}_T0_${n}_$arm.txt" 20 0 --reprofile "$@"
  done
done
