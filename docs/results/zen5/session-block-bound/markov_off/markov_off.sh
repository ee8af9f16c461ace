#!/bin/bash
# The shipped DSpark drafter with its Markov term switched off at inference (no_markov.patch
# applied to 92c9b58, the binary built aside; DSPARK_NO_MARKOV=1) against on: how much the
# trained vanilla head adds. dspark eval, fixed K = 8, 20 prompts of each eval file, at
# temperature 1 (no seed) and greedy.
#   markov_off.sh PATCHED_DSPARK OUT_DIR   (repository root)
BIN=$1; OUT=$2; E=../shared/data/eval; mkdir -p "$OUT"
sets=(--dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl)
for t in 1 0; do
  for markov in on off; do
    env $([[ $markov == off ]] && echo DSPARK_NO_MARKOV=1) "$BIN" eval --model models/tiny-target \
      --speculator models/tiny-target-dspark --spec-schedule fixed --temperature $t --max-tokens 128 --threads 2 \
      --limit 20 --no-baseline "${sets[@]}" 2>&1 | tr '\r' '\n' | grep -v "prompts, tau" > "$OUT/T${t}_markov_${markov}.txt"
  done
done
