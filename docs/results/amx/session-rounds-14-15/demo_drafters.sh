#!/bin/bash
# scripts/demo's request with two drafters, alternating A B B A each round: `dspark
# generate` with the median of 5 speculative / plain pairs per run; extra args (e.g.
# `--isa vnni`) go to every run.
#   demo_drafters.sh OUT_FILE ROUNDS A_DIR B_DIR [ARGS...]   (repository root)
OUT=$1; ROUNDS=$2; A=$3; B=$4; shift 4
P="Question: Tom has 3 boxes with 12 apples each. He gives away 7 apples. How many apples does he have left?
Answer:"
: > "$OUT"
for ((i = 0; i < ROUNDS; i++)); do
  for d in "$A" "$B" "$B" "$A"; do
    echo "== $d $*" >> "$OUT"
    build/src/cli/dspark generate --model models/tiny-target --prompt "$P" --max-tokens 96 --repeat 5 \
      --speculator "$d" "$@" 2>&1 | grep 'kernels:\|drafter:\|tau\|speedup' >> "$OUT"
  done
done
