#!/bin/bash
# Temperature 1 without a seed, fixed K = 8, 20 prompts per file: the other shipped
# proposers beside the DSpark drafter's fixed_T1_unseeded_1.txt (same command).
cd /work/main
OUT=${OUT:-/work/runs/vocab}
DATA="--dataset ../shared/data/eval/gsm8k_test.jsonl --dataset ../shared/data/eval/humaneval.jsonl --dataset ../shared/data/eval/mbpp.jsonl --dataset ../shared/data/eval/mtbench_question.jsonl"
for s in tiny-draft-lm tiny-target-dflash tiny-target-eagle3; do
  build/src/cli/dspark eval --model models/tiny-target --max-tokens 128 --threads 2 --spec-schedule fixed --no-baseline \
    --num-spec-tokens 8 --speculator models/$s --temperature 1 --limit 20 $DATA --json $OUT/fixed_T1_unseeded_$s.json \
    > $OUT/fixed_T1_unseeded_$s.txt 2>&1
done
