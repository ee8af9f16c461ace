#!/bin/bash
# MT-Bench's 80 prompts at temperature 1, fixed K = 8, the shipped DSpark drafter with bf16
# and int8 weights, each with seeds 1 .. ROUNDS (--seed: sampling keyed on seed and
# position; without a seed a run repeats its draws exactly): how far apart two samplings
# of the same drafter land, next to how far apart the two weight formats do.
#   mtbench_t1.sh DSPARK OUT_DIR ROUNDS   (repository root)
BIN=$1; OUT=$2; ROUNDS=$3; mkdir -p "$OUT"
for ((i = 1; i <= ROUNDS; i++)); do
  for q in none int8; do
    "$BIN" eval --model models/tiny-target --speculator models/tiny-target-dspark --draft-quantization $q \
      --spec-schedule fixed --num-spec-tokens 8 --temperature 1 --seed $i --max-tokens 128 --threads 2 \
      --no-baseline --dataset ../shared/data/eval/mtbench_question.jsonl 2>&1 | tr '\r' '\n' |
      grep -v "prompts, tau" > "$OUT/${q}_seed$i.txt"
  done
done
