#!/bin/bash
# The final build's defaults (bf16 KV for the bf16 checkpoint): scripts/demo (its step profile measured
# again, then cached), then dspark eval,
# adaptive, greedy, 20 prompts per file, 128 tokens, 2 threads, --reprofile, bf16 and int8 weights.
cd "$(dirname "$0")/../../../.."
bash scripts/demo --reprofile 2>&1 | grep "^\[dspark\]\|^kernels"
bash scripts/demo 2>&1 | grep '^\[dspark\]\|^kernels'
E=../shared/data/eval
for q in none int8; do
  echo "=== quantization $q"
  build/src/cli/dspark eval --model models/tiny-target --speculator models/tiny-target-dspark --temperature 0 \
    --max-tokens 128 --threads 2 --limit 20 --quantization $q --reprofile --dataset $E/gsm8k_test.jsonl \
    --dataset $E/humaneval.jsonl --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl 2>&1 |
    grep -v 'prompts, tau' | grep -v '^\[dspark\] prompt'
done
