#!/bin/bash
# Plain decoding (no speculation) of scripts/demo's prompt, 128 tokens past EOS, with bf16
# and int8 weights alternately, ROUNDS times (A B B A ...): decode tokens/s per run.
#   decode_q.sh DSPARK OUT_FILE ROUNDS   (repository root)
BIN=$1; OUT=$2; ROUNDS=$3
P="Question: Tom has 3 boxes with 12 apples each. He gives away 7 apples. How many apples does he have left?
Answer:"
: > "$OUT"
for ((i = 0; i < ROUNDS; i++)); do
  if ((i % 2 == 0)); then order="none int8"; else order="int8 none"; fi
  for q in $order; do
    printf '%s ' "$q" >> "$OUT"
    "$BIN" generate --model models/tiny-target --quantization $q --prompt "$P" --max-tokens 128 --ignore-eos \
      --threads 2 2>&1 | grep -o 'decode [0-9.]* tokens/s' >> "$OUT"
  done
done
