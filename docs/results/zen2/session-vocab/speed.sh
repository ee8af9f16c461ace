#!/bin/bash
# Adaptive schedule, greedy: the shipped drafter with a greedy draft vocabulary of 2,048
# tokens ("greedy") against the same drafter without it ("full"), alternating; 20 prompts
# per file, 128 tokens, 2 threads, nothing else running.
cd /work/main
OUT=${OUT:-/work/runs/vocab}
FULL=${FULL:-models/tiny-target-dspark}
GREEDY=${GREEDY:-/work/runs/dv/greedy2048}
for i in 1 2; do
  for mode in greedy full; do
    spec=$FULL; [ $mode = greedy ] && spec=$GREEDY
    build/src/cli/dspark eval --model models/tiny-target --speculator $spec --temperature 0 --max-tokens 128 \
      --threads 2 --limit 20 --dataset ../shared/data/eval/{gsm8k_test,humaneval,mbpp,mtbench_question}.jsonl \
      > $OUT/speed_T0_${mode}_$i.txt 2>&1
  done
done
