#!/bin/bash
# Acceptance of block drafters side by side: dspark eval, fixed K = 8, the first LIMIT prompts
# of each eval file, at temperature 1 (no seed) and greedy, with nothing but the drafter
# changing between runs.
#   eval.sh DSPARK OUT_DIR LIMIT NAME=DRAFTER_DIR ...   (repository root)
BIN=$1; OUT=$2; LIMIT=$3; shift 3; E=../shared/data/eval; mkdir -p "$OUT"
sets=(--dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl)
for t in 1 0; do
  for arm in "$@"; do
    name=${arm%%=*}; dir=${arm#*=}
    "$BIN" eval --model models/tiny-target --speculator "$dir" --spec-schedule fixed --num-spec-tokens 8 \
      --temperature $t --max-tokens 128 --threads 2 --limit $LIMIT --no-baseline "${sets[@]}" 2>&1 |
      tr '\r' '\n' | grep -v "prompts, tau" > "$OUT/T${t}_${name}.txt"
  done
done
