#!/bin/bash
# Plain int8 decoding (512 tokens past EOS, 2 threads) with 0, 1 and 2 busy processes on the
# 2 cores (`yes > /dev/null`, niced like nothing: same priority), the build before the
# claimed parts (dspark_final) and after (dspark_claim) alternately, 3 rounds each; then the
# same for speculative decoding of scripts/demo's request (DSpark drafter, --repeat 3).
cd /work/main
P="The history of the city begins in the early years of the century, when"
D="Question: Tom has 3 boxes with 12 apples each. He gives away 7 apples. How many apples does he have left?
Answer:"
for load in 0 1 2; do
  pids=()
  for i in $(seq 1 $load); do yes > /dev/null & pids+=($!); done
  sleep 1
  for round in 1 2 3; do for b in dspark_final dspark_claim; do
    echo "load $load round $round $b plain-int8 $(/work/runs/s36/$b generate --model models/tiny-target --prompt "$P" --max-tokens 512 --ignore-eos --threads 2 --quantization int8 2>&1 | grep -o 'decode [0-9.]* tokens/s')"
    echo "load $load round $round $b demo-bf16 $(/work/runs/s36/$b generate --model models/tiny-target --prompt "$D" --max-tokens 96 --threads 2 --speculator models/tiny-target-dspark --repeat 3 2>&1 | grep -o 'speculative.*decode [0-9.]* tokens/s\|plain  .*decode [0-9.]* tokens/s\|speedup over plain: [0-9.]*x' | grep -o 'decode [0-9.]* tokens/s\|[0-9.]*x' | tr '\n' ' ')"
  done; done
  for p in "${pids[@]}"; do kill $p; done
  wait 2>/dev/null
done
