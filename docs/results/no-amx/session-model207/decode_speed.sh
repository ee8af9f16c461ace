#!/bin/bash
# dspark's side of ../../zen5/session-llamacpp/llama_ab.sh (llama.cpp could not be brought to this
# machine): plain decoding of 128 tokens past EOS (`dspark generate --repeat 3`) and the 1- and
# 9-token step costs at context 16 (`dspark profile --reprofile`), bf16 and int8 weights, ROUNDS rounds.
#   decode_speed.sh DSPARK ROUNDS   (repository root)
DSPARK=$1; N=${2:-3}
P="The history of the city begins in the early years of the century, when"
for round in $(seq "$N"); do
  echo "== dspark round $round"
  for q in none int8; do
    echo "plain $q: $($DSPARK generate --model models/tiny-target --prompt "$P" --max-tokens 128 --ignore-eos \
      --threads 2 --quantization $q --repeat 3 2>&1 | grep -o 'decode [0-9.]* tokens/s' | tr '\n' ' ')"
    $DSPARK profile --model models/tiny-target --threads 2 --quantization $q --reprofile --context-length 16 \
      --max-sequences 1 2>&1 | grep -E '^# |^ +(1|9) '
  done
done
