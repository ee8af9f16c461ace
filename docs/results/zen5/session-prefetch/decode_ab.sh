#!/bin/bash
# Plain decoding, 960 tokens past EOS (the history grows to about 975 positions), 2 threads,
# the build before the KV prefetch (dspark_4k) and after (dspark_pf) alternately, the
# order reversed every other round, bf16 and int8 weights, f32 KV (the default).
cd "$(dirname "$0")/../../../.."
B=${BIN:-/work/runs/s37}
P="The history of the city begins in the early years of the century, when"
for round in 1 2 3 4; do
  bins="dspark_4k dspark_pf"; ((round % 2)) || bins="dspark_pf dspark_4k"
  for q in none int8; do for b in $bins; do
    echo "round $round $b $q: $($B/$b generate --model models/tiny-target --prompt "$P" --max-tokens 960 --ignore-eos \
      --threads 2 --quantization $q --repeat 3 2>&1 | grep -o 'decode [0-9.]* tokens/s')"
  done; done
done
