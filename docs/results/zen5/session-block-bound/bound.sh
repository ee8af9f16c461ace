#!/bin/bash
# The block-drafter bound (dspark block-bound) on the five eval domains (20 prompts of each
# file, as dspark eval --limit 20), beside what the shipped drafters reach there.
#   bound.sh OUT_DIR   (repository root; 2 threads)
OUT=$1; E=../shared/data/eval; mkdir -p "$OUT"
sets=(--dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl)
for ts in 1:64 1:128 0.7:64; do
  t=${ts%:*} s=${ts#*:}
  build/src/cli/dspark block-bound --model models/tiny-target --threads 2 --limit 20 --temperature $t --samples $s \
    "${sets[@]}" > "$OUT/bound_T${t}_S${s}.txt" 2>&1
done
# What the drafters reach at the same temperatures: fixed K = 8, no seed.
for t in 1 0.7; do
  for spec in tiny-target-dspark tiny-draft-lm tiny-target-dflash; do
    build/src/cli/dspark eval --model models/tiny-target --speculator models/$spec --spec-schedule fixed \
      --temperature $t --max-tokens 128 --threads 2 --limit 20 --no-baseline "${sets[@]}" 2>&1 | tr '\r' '\n' |
      grep -v "prompts, tau" > "$OUT/eval_T${t}_${spec}.txt"
  done
done
