#!/bin/bash
# The same as speed.sh at temperature 1 (no seed: standard rejection sampling).
# usage: speed_t1.sh ROUNDS OUT_DIR BEFORE_BIN AFTER_BIN   (from the repository root)
R=$1; OUT=$2; shift 2; bins=("$@"); names=(before after)
E=../shared/data/eval
mkdir -p "$OUT"
for r in $(seq 1 "$R"); do
  for i in 0 1; do k=$(( (i + r) % 2 ))
    "${bins[$k]}" eval --model models/tiny-target --speculator models/tiny-target-dspark --temperature 1 \
      --max-tokens 128 --threads 2 --limit 20 --dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl \
      --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl > "$OUT/t1_${names[$k]}_$r.txt" 2>&1
  done
done
