#!/bin/bash
# The draft LM on its default (adaptive) schedule, greedy, against plain decoding in the same
# run, with two dspark binaries, A B B A: before and after the draft-model proposer stopped
# feeding requests the schedule gives no drafts (nothing else running).
#   fix_ab.sh BIN_A BIN_B OUT_DIR LIMIT DRAFT_LM_DIR   (repository root)
A=$1; B=$2; OUT=$3; LIMIT=$4; LM=$5; E=../shared/data/eval; mkdir -p "$OUT"
sets=(--dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl)
for arm in a b b2 a2; do
  case $arm in a|a2) bin=$A;; *) bin=$B;; esac
  "$bin" eval --model models/tiny-target --speculator "$LM" --temperature 0 --max-tokens 128 --threads 2 \
    --limit $LIMIT "${sets[@]}" 2>&1 | tr '\r' '\n' | grep -v "prompts, tau" > "$OUT/$arm.txt"
done
