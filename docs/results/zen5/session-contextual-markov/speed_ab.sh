#!/bin/bash
# Speed of two drafters side by side: dspark eval on its default adaptive schedule, greedy,
# against plain decoding in the same run, the first LIMIT prompts of each eval file,
# alternating A B B A for ROUNDS rounds (nothing else running).
#   speed_ab.sh DSPARK OUT_DIR LIMIT ROUNDS A_DIR B_DIR   (repository root)
BIN=$1; OUT=$2; LIMIT=$3; ROUNDS=$4; A=$5; B=$6; E=../shared/data/eval; mkdir -p "$OUT"
sets=(--dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl)
for r in $(seq 1 "$ROUNDS"); do
  for arm in a b b2 a2; do
    case $arm in a|a2) dir=$A;; *) dir=$B;; esac
    "$BIN" eval --model models/tiny-target --speculator "$dir" --temperature 0 --max-tokens 128 --threads 2 \
      --limit $LIMIT "${sets[@]}" 2>&1 | tr '\r' '\n' | grep -v "prompts, tau" > "$OUT/r${r}_${arm}.txt"
  done
done
