#!/bin/bash
# Two dspark binaries side by side on one drafter at one temperature: dspark eval on the
# default (adaptive) schedule against plain decoding in the same run, the first LIMIT
# prompts of each eval file, A B B A (nothing else running). The step-cost profile is
# whatever DSPARK_CACHE_DIR (else ~/.cache/dspark) holds; both binaries read the same one.
#   ratio_ab.sh BEFORE AFTER OUT_DIR LIMIT TEMPERATURE DRAFTER [EXTRA_ARGS...]   (repository root)
A=$1; B=$2; OUT=$3; LIMIT=$4; TEMP=$5; D=$6; shift 6; E=../shared/data/eval; mkdir -p "$OUT"
sets=(--dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl)
name=$(basename "$D")
for arm in before after after_2 before_2; do
  case $arm in before*) bin=$A;; *) bin=$B;; esac
  "$bin" eval --model models/tiny-target --speculator "$D" "$@" --temperature "$TEMP" --max-tokens 128 --threads 2 \
    --limit $LIMIT "${sets[@]}" 2>&1 | tr '\r' '\n' | grep -v "prompts, tau" > "$OUT/${name}_T${TEMP}_${arm}.txt"
done
