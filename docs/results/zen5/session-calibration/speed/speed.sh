#!/bin/bash
# Adaptive schedule, 2 threads, 20 prompts per eval file: the builds before and after the
# calibrator alternately, both orders, greedy (T=0, the default; files before_R / after_R) or
# at temperature 1 (T=1, no seed; files t1_before_R / t1_after_R).
# usage: [T=1] speed.sh ROUNDS OUT_DIR BEFORE_BIN AFTER_BIN   (from the repository root, nothing else running)
R=$1; OUT=$2; shift 2; bins=("$@"); names=(before after)
T=${T:-0}; prefix=""; [[ "$T" != 0 ]] && prefix="t${T}_"
E=../shared/data/eval
mkdir -p "$OUT"
for r in $(seq 1 "$R"); do
  for i in 0 1; do k=$(( (i + r) % 2 ))
    "${bins[$k]}" eval --model models/tiny-target --speculator models/tiny-target-dspark --temperature "$T" \
      --max-tokens 128 --threads 2 --limit 20 --dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl \
      --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl > "$OUT/${prefix}${names[$k]}_$r.txt" 2>&1
  done
done
