#!/bin/bash
# The shipped DSpark drafter with bf16 (the target's) and int8 weights side by side at one
# temperature: dspark eval on the default (adaptive) schedule against plain decoding in
# the same run, the first LIMIT prompts of each eval file, A B B A (nothing else running).
#   draft_q_speed.sh DSPARK OUT_DIR LIMIT TEMPERATURE [DRAFTER]   (repository root)
BIN=$1; OUT=$2; LIMIT=$3; TEMP=$4; D=${5:-models/tiny-target-dspark}; E=../shared/data/eval; mkdir -p "$OUT"
sets=(--dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl)
for arm in bf16 int8 int8_2 bf16_2; do
  case $arm in bf16*) q=none;; *) q=int8;; esac
  "$BIN" eval --model models/tiny-target --speculator "$D" --draft-quantization $q --temperature "$TEMP" \
    --max-tokens 128 --threads 2 --limit $LIMIT "${sets[@]}" 2>&1 | tr '\r' '\n' | grep -v "prompts, tau" \
    > "$OUT/T${TEMP}_${arm}.txt"
done
