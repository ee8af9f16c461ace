#!/bin/bash
# The drafter's time per round for two drafters, nothing else changing: dspark eval, fixed
# K = 8, greedy and temperature 1, the first LIMIT prompts of GSM8K and MBPP, alternating
# A B B A (nothing else running).
#   drafter_cost.sh DSPARK OUT_DIR LIMIT A_DIR B_DIR   (repository root)
BIN=$1; OUT=$2; LIMIT=$3; A=$4; B=$5; E=../shared/data/eval; mkdir -p "$OUT"
for t in 0 1; do
  for arm in a b b2 a2; do
    case $arm in a|a2) dir=$A;; *) dir=$B;; esac
    "$BIN" eval --model models/tiny-target --speculator "$dir" --spec-schedule fixed --num-spec-tokens 8 \
      --temperature $t --max-tokens 128 --threads 2 --limit $LIMIT --no-baseline \
      --dataset $E/gsm8k_test.jsonl --dataset $E/mbpp.jsonl 2>&1 | tr '\r' '\n' | grep -v "prompts, tau" > "$OUT/T${t}_${arm}.txt"
  done
done
