#!/bin/bash
# dspark eval on the default (adaptive) schedule against plain decoding in the same run,
# the shipped DSpark drafter, the first LIMIT prompts of each eval file, at one
# temperature; extra arguments go to dspark (e.g. --isa vnni, --quantization int8).
#   eval_speed.sh DSPARK OUT_FILE LIMIT TEMPERATURE [DSPARK ARGS...]   (repository root)
BIN=$1; OUT=$2; LIMIT=$3; TEMP=$4; shift 4; E=../shared/data/eval
"$BIN" eval --model models/tiny-target --speculator models/tiny-target-dspark --temperature "$TEMP" \
  --max-tokens 128 --threads 2 --limit "$LIMIT" --dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl \
  --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl "$@" 2>&1 | tr '\r' '\n' | grep -v "prompts, tau" > "$OUT"
