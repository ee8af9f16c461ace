#!/bin/bash
# Speculative decoding with int8 weights: dspark eval (DSpark drafter, adaptive schedule,
# greedy, 20 prompts per eval file, 128 tokens, 2 threads, --quantization int8), OLD and NEW
# builds alternating, both orders.   int8_eval.sh ROUNDS OUT_DIR OLD NEW   (repository root)
R=$1; OUT=$2; shift 2; bins=("$@"); names=(old new)
E=../shared/data/eval
mkdir -p "$OUT"
for r in $(seq 1 "$R"); do
  for i in 0 1; do k=$(( (i + r) % 2 ))
    "${bins[$k]}" eval --model models/tiny-target --speculator models/tiny-target-dspark --quantization int8 \
      --max-tokens 128 --threads 2 --limit 20 --dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl \
      --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl 2>&1 | tr '\r' '\n' | grep -v "prompts, tau" \
      > "$OUT/int8_${names[$k]}_$r.txt"
  done
done
