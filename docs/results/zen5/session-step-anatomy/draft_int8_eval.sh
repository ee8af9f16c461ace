#!/bin/bash
# A bf16 target with its DSpark drafter in bf16 (the default) or int8 (--draft-quantization
# int8): dspark eval, adaptive schedule, greedy, 20 prompts per eval file, 128 tokens, 2
# threads, the two alternating with the order swapped every round.
#   draft_int8_eval.sh ROUNDS OUT_DIR DSPARK   (repository root)
R=$1; OUT=$2; BIN=$3
E=../shared/data/eval
mkdir -p "$OUT"
names=(bf16 int8)
for r in $(seq 1 "$R"); do
  for i in 0 1; do k=$(( (i + r) % 2 ))
    dq=auto; [[ ${names[$k]} == int8 ]] && dq=int8
    "$BIN" eval --model models/tiny-target --speculator models/tiny-target-dspark --draft-quantization $dq \
      --max-tokens 128 --threads 2 --limit 20 --dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl \
      --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl 2>&1 | tr '\r' '\n' | grep -v "prompts, tau" \
      > "$OUT/draft_${names[$k]}_$r.txt"
  done
done
