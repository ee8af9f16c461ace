#!/bin/bash
# scripts/demo's request (greedy, 96 tokens, DSpark, 5 interleaved speculative / plain pairs
# per run) with the OLD and NEW builds alternating, the order swapped every round.
#   demo_ab.sh ROUNDS OLD NEW   (repository root)
R=$1; shift; bins=("$@"); names=(old new)
PROMPT="Question: Tom has 3 boxes with 12 apples each. He gives away 7 apples. How many apples does he have left?
Answer:"
for r in $(seq 1 "$R"); do
  for i in 0 1; do k=$(( (i + r) % 2 ))
    echo -n "${names[$k]} $r: "
    "${bins[$k]}" generate --model models/tiny-target --speculator models/tiny-target-dspark --prompt "$PROMPT" \
      --max-tokens 96 --repeat 5 2>&1 | grep 'speedup over plain' | sed 's/.*plain: //'
  done
done
