#!/bin/bash
# dspark eval (../session-int8-amx/eval_speed.sh: greedy, adaptive, the shipped DSpark drafter, 20
# prompts per file, plain decoding in the same run) under each configuration in turn, the order
# reversed every other round, each run re-measuring its step-cost table (--reprofile).
#   eval_caps.sh DSPARK OUT_DIR ROUNDS CONFIG...   (repository root; CONFIG as in demo_caps.sh)
BIN=$1; OUT=$2; ROUNDS=$3; shift 3; CONFIGS=("$@"); D=$(dirname "$0"); mkdir -p "$OUT"
n=0
for ((i = 0; i < ROUNDS; i++)); do
  order=("${CONFIGS[@]}")
  if ((i % 2 == 1)); then order=(); for ((j = ${#CONFIGS[@]} - 1; j >= 0; j--)); do order+=("${CONFIGS[j]}"); done; fi
  for config in "${order[@]}"; do
    set -- $config; name=$1; shift; n=$((n + 1))
    bash "$D/../session-int8-amx/eval_speed.sh" "$BIN" "$OUT/eval_T0_${n}_$name.txt" 20 0 "$@" --reprofile
  done
done
