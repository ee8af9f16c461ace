#!/bin/bash
# scripts/demo's request (greedy, 96 tokens at most, the shipped DSpark drafter) under the
# adaptive schedule and fixed K = 4 and 5, order A B C C B A, 15 interleaved speculative /
# plain pairs each: tau and the median speedup line.
#   demo_schedules.sh DSPARK OUT   (repository root)
BIN=$1; OUT=$2; : > "$OUT"
P="Question: Tom has 3 boxes with 12 apples each. He gives away 7 apples. How many apples does he have left?
Answer:"
for k in adaptive 4 5 5 4 adaptive; do
  args=(); [[ $k != adaptive ]] && args=(--spec-schedule fixed --num-spec-tokens "$k")
  { echo "== $k"; "$BIN" generate --model models/tiny-target --speculator models/tiny-target-dspark --prompt "$P" \
      --max-tokens 96 --repeat 15 "${args[@]}" 2>&1 | grep "tau\|speedup"; } >> "$OUT"
done
