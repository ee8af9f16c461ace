#!/bin/bash
# scripts/demo's request with the shipped drafter (greedy vocabulary) and the drafter before
# it (whole vocabulary), alternating, twice each.
cd /work/main
PROMPT="Question: Tom has 3 boxes with 12 apples each. He gives away 7 apples. How many apples does he have left?
Answer:"
for i in 1 2; do
  for spec in models/tiny-target-dspark /work/runs/vocab/full; do
    echo "== $spec"
    build/src/cli/dspark generate --model models/tiny-target --prompt "$PROMPT" --max-tokens 96 --repeat 5 \
      --speculator $spec 2>&1 | grep "^\[dspark\]"
  done
done
