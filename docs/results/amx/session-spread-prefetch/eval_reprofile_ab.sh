#!/bin/bash
# dspark eval (eval_speed.sh) before / after alternating, each run measuring its own
# step-cost profile first (--reprofile), greedy, 20 prompts per file, --isa vnni, with bf16
# (none) and int8 target weights:
#   eval_reprofile_ab.sh DSPARK_BEFORE DSPARK_AFTER OUT_DIR   (repository root)
A=$1; B=$2; OUT=$3; D=$(dirname "$0")
mkdir -p "$OUT"
for q in none int8; do
  n=0
  for arm in before after after before; do
    n=$((n + 1))
    if [[ $arm == before ]]; then bin=$A; else bin=$B; fi
    bash "$D/../session-int8-amx/eval_speed.sh" "$bin" "$OUT/eval_vnni_T0_${q}_reprofile_${n}_$arm.txt" 20 0 --isa vnni --quantization $q \
      --reprofile
  done
done
