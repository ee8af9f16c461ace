#!/bin/bash
# dspark eval, adaptive schedule, greedy, 20 prompts per file, 128 tokens, 2 threads.
cd /work/main
for q in "none" "int8"; do
  echo "=== quantization $q"
  $DSPARK eval --model models/tiny-target --speculator models/tiny-target-dspark --temperature 0 \
    --max-tokens 128 --threads 2 --limit 20 --quantization $q \
    --dataset ../shared/data/eval/gsm8k_test.jsonl --dataset ../shared/data/eval/humaneval.jsonl \
    --dataset ../shared/data/eval/mbpp.jsonl --dataset ../shared/data/eval/mtbench_question.jsonl 2>&1 | grep -v '^\[dspark\] prompt'
done
