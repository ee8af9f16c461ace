#!/bin/bash
# dspark eval, adaptive, greedy, 20 prompts per file, 128 tokens, 2 threads, --reprofile;
# the base build (before the attention change) and the new one alternately, bf16 and int8.
cd /work/main
for round in 1 2; do
for q in none int8; do
for b in dspark_base dspark_new; do
  echo "=== round $round build $b quantization $q"
  /work/runs/s36/$b eval --model models/tiny-target --speculator models/tiny-target-dspark --temperature 0 \
    --max-tokens 128 --threads 2 --limit 20 --quantization $q --reprofile \
    --dataset ../shared/data/eval/gsm8k_test.jsonl --dataset ../shared/data/eval/humaneval.jsonl \
    --dataset ../shared/data/eval/mbpp.jsonl --dataset ../shared/data/eval/mtbench_question.jsonl 2>&1 | grep -v 'prompts, tau' | grep -v '^\[dspark\] prompt'
done; done; done
