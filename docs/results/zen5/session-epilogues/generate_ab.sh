#!/usr/bin/env bash
# Old and new dspark on scripts/demo's request (bf16, then --quantization int8), alternating,
# order swapped every round: speculative and plain decode tokens/s and the speedup line.
# usage: generate_ab.sh OLD_DIR NEW_DIR ROUNDS   (run from the repository root)
set -euo pipefail
old=$1 new=$2 rounds=${3:-4}
prompt="Question: Tom has 3 boxes with 12 apples each. He gives away 7 apples. How many apples does he have left?
Answer:"
for q in none int8; do
  for ((i = 1; i <= rounds; i++)); do
    if ((i % 2)); then order="old new"; else order="new old"; fi
    for which in $order; do
      dir=$old; [[ $which == new ]] && dir=$new
      "$dir/dspark" generate --model models/tiny-target --speculator models/tiny-target-dspark --prompt "$prompt" \
        --max-tokens 96 --repeat 5 --quantization "$q" 2>&1 | grep -E 'speculative:|plain *:|speedup' |
        sed "s/^/$q round $i $which: /"
    done
  done
done
