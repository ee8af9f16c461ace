#!/bin/bash
# Greedy DSpark drafts read as the argmax of the head's rows (new) against the transform and
# draw over the target vocabulary (old): dspark eval, bf16, adaptive schedule, greedy, 20
# prompts per eval file, 128 tokens, 2 threads, the builds alternating, order swapped every
# round.   greedy_argmax_eval.sh ROUNDS OUT_DIR OLD NEW   (repository root)
R=$1; OUT=$2; shift 2; bins=("$@"); names=(old new)
E=../shared/data/eval
mkdir -p "$OUT"
for r in $(seq 1 "$R"); do
  for i in 0 1; do k=$(( (i + r) % 2 ))
    "${bins[$k]}" eval --model models/tiny-target --speculator models/tiny-target-dspark \
      --max-tokens 128 --threads 2 --limit 20 --dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl \
      --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl 2>&1 | tr '\r' '\n' | grep -v "prompts, tau" \
      > "$OUT/${names[$k]}_$r.txt"
  done
done
