#!/bin/bash
# Speed of two drafters side by side at one temperature: dspark eval on each drafter's
# default schedule (adaptive), against plain decoding in the same run, the first LIMIT
# prompts of each eval file, A B B A (nothing else running).
#   speed.sh DSPARK OUT_DIR LIMIT TEMPERATURE A_DIR B_DIR   (repository root)
BIN=$1; OUT=$2; LIMIT=$3; TEMP=$4; A=$5; B=$6; E=../shared/data/eval; mkdir -p "$OUT"
sets=(--dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl)
for arm in a b b2 a2; do
  case $arm in a|a2) dir=$A;; *) dir=$B;; esac
  "$BIN" eval --model models/tiny-target --speculator "$dir" --temperature "$TEMP" --max-tokens 128 --threads 2 \
    --limit $LIMIT "${sets[@]}" 2>&1 | tr '\r' '\n' | grep -v "prompts, tau" > "$OUT/T${TEMP}_${arm}.txt"
done
