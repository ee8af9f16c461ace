#!/bin/bash
# Acceptance of a drafter with int8 weights (quantized at load) for the bf16 target: dspark
# eval, fixed K = 8, every eval prompt, temperature 1 (no seed) and greedy. The bf16
# figures of the same drafters: DSpark in session-more-rounds/evalall/ (T0_shipped.txt,
# T1_shipped.txt) and T*_dspark_mtbench.txt of session-fair-baselines/evalall/ (MT-Bench
# pooled), the draft LM in session-fair-baselines/evalall/T*_draftlm_new.txt.
#   tau_int8.sh DSPARK OUT_DIR DRAFTER [ARGS...]   (repository root)
BIN=$1; OUT=$2; D=$3; shift 3; E=../shared/data/eval; mkdir -p "$OUT"
sets=(--dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl)
for t in 0 1; do
  "$BIN" eval --model models/tiny-target --speculator "$D" "$@" --spec-schedule fixed \
    --num-spec-tokens 8 --temperature $t --max-tokens 128 --threads 2 --limit 100000 --no-baseline "${sets[@]}" 2>&1 |
    tr '\r' '\n' | grep -v "prompts, tau" > "$OUT/T${t}_int8.txt"
done
