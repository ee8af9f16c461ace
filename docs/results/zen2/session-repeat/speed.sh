#!/bin/bash
# Adaptive schedule, greedy, the shipped calibration with repeat shifts ("on") against the
# previous one ("off": round 5's config.json before this change, same weights), alternating;
# 20 prompts per file, 2 threads, nothing else running.
cd /work/main
OUT=${OUT:-/work/runs/r19}
rm -rf /work/runs/r19/before && cp -r models/tiny-target-dspark /work/runs/r19/before
git show 3a81a90^:models/tiny-target-dspark/config.json > /work/runs/r19/before/config.json
for i in 1 2; do
  for mode in on off; do
    spec=models/tiny-target-dspark; [ $mode = off ] && spec=/work/runs/r19/before
    build/src/cli/dspark eval --model models/tiny-target --speculator $spec --temperature 0 --max-tokens 128 \
      --threads 2 --limit 20 --dataset ../shared/data/eval/{gsm8k_test,humaneval,mbpp,mtbench_question}.jsonl \
      > $OUT/speed_T0_${mode}_$i.txt 2>&1
  done
done
