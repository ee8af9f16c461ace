#!/bin/bash
# Greedy draft-model drafts read as the argmax of the draft LM's logits (new) against the
# transform and draw (old): dspark eval with models/tiny-draft-lm, greedy, fixed K = 8,
# 20 prompts of gsm8k and mbpp, 2 threads, the builds alternating, order swapped every round.
#   draft_lm_greedy_eval.sh ROUNDS OUT_DIR OLD NEW   (repository root)
R=$1; OUT=$2; shift 2; bins=("$@"); names=(old new)
E=../shared/data/eval
mkdir -p "$OUT"
for r in $(seq 1 "$R"); do
  for i in 0 1; do k=$(( (i + r) % 2 ))
    "${bins[$k]}" eval --model models/tiny-target --speculator models/tiny-draft-lm --spec-schedule fixed \
      --max-tokens 128 --threads 2 --limit 20 --no-baseline --dataset $E/gsm8k_test.jsonl --dataset $E/mbpp.jsonl \
      2>&1 | tr '\r' '\n' | grep -v "prompts, tau" > "$OUT/${names[$k]}_$r.txt"
  done
done
