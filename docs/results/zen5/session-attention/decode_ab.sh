#!/bin/bash
# Plain decoding, base and final builds alternately: dspark generate, 512 tokens past EOS
# (positions 13..524, so attention reads up to 524 keys), 2 threads, bf16 and int8; 3 rounds.
cd /work/main
P="The history of the city begins in the early years of the century, when"
for round in 1 2 3; do for q in none int8; do for b in dspark_base dspark_final; do
  echo "round $round $q $b $(/work/runs/s36/$b generate --model models/tiny-target --prompt "$P" --max-tokens 512 --ignore-eos --threads 2 --quantization $q 2>&1 | grep -o 'decode [0-9.]* tokens/s')"
done; done; done
