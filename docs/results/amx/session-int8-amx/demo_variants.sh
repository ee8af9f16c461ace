#!/bin/bash
# scripts/demo's request with one dspark binary under several option sets, rotating the
# order each round: `dspark generate` on the shipped DSpark drafter, median of 5
# speculative / plain pairs per run.
#   demo_variants.sh DSPARK OUT_FILE ROUNDS "ARGS 1" "ARGS 2" ...   (repository root)
BIN=$1; OUT=$2; ROUNDS=$3; shift 3; VARIANTS=("$@")
P="Question: Tom has 3 boxes with 12 apples each. He gives away 7 apples. How many apples does he have left?
Answer:"
: > "$OUT"
n=${#VARIANTS[@]}
for ((i = 0; i < ROUNDS; i++)); do
  for ((j = 0; j < n; j++)); do
    args=${VARIANTS[$(((i + j) % n))]}
    echo "== $args" >> "$OUT"
    # shellcheck disable=SC2086
    "$BIN" generate --model models/tiny-target --prompt "$P" --max-tokens 96 --repeat 5 \
      --speculator models/tiny-target-dspark $args 2>&1 | grep 'kernels:\|drafter:\|tau\|speedup' >> "$OUT"
  done
done
