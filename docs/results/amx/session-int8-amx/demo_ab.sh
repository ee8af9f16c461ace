#!/bin/bash
# scripts/demo's request with two dspark binaries, alternating ROUNDS times (A B B A ...):
# `dspark generate` on the shipped DSpark drafter, median of 5 speculative / plain pairs (the
# files before session-huge-pages kept only the drafter, tau and speedup lines).
#   demo_ab.sh BEFORE AFTER OUT_FILE ROUNDS [DSPARK ARGS...]   (repository root)
A=$1; B=$2; OUT=$3; ROUNDS=$4; shift 4
P="Question: Tom has 3 boxes with 12 apples each. He gives away 7 apples. How many apples does he have left?
Answer:"
: > "$OUT"
for ((i = 0; i < ROUNDS; i++)); do
  if ((i % 2 == 0)); then order="before after"; else order="after before"; fi
  for arm in $order; do
    if [[ $arm == before ]]; then bin=$A; else bin=$B; fi
    echo "== $arm" >> "$OUT"
    "$bin" generate --model models/tiny-target --prompt "$P" --max-tokens 96 --repeat 5 \
      --speculator models/tiny-target-dspark "$@" 2>&1 | grep 'kernels:\|memory:\|drafter:\|decode\|tau' >> "$OUT"
  done
done
