#!/bin/bash
# Plain decoding, OLD and NEW dspark builds alternating (OLD first in odd rounds, NEW first in
# even ones), every weight format x kernel level
# this CPU has (--isa caps the level), 128 and 512 tokens past EOS, 2 threads.
#   decode_ab.sh ROUNDS OLD NEW > OUT
# One line per run: round, tokens, quantization, isa, build, decode tokens/s.
rounds=$1; old=$2; new=$3
P="The history of the city begins in the early years of the century, when"
for i in $(seq "$rounds"); do
  for tokens in 128 512; do
    for cfg in "none auto" "none avx512" "none avx2" "int8 auto" "int8 avxvnni" "int8 avx2"; do
      set -- $cfg
      order="old new"; [ $((i % 2)) = 0 ] && order="new old"
      for b in $order; do
        bin=$old; [ "$b" = new ] && bin=$new
        r=$("$bin" generate --model models/tiny-target --prompt "$P" --max-tokens "$tokens" --ignore-eos \
              --threads 2 --quantization "$1" --isa "$2" 2>&1 | grep -o 'decode [0-9.]* tokens/s' | awk '{print $2}')
        echo "round $i tokens $tokens quantization $1 isa $2 build $b decode_tokens_per_s $r"
      done
    done
  done
done
