#!/bin/bash
# dspark against llama.cpp on the same model, cores and machine, alternately (3 rounds, the
# order reversed every other round). llama.cpp is built from its own source outside this
# repository (README); GGUF files from ../shared/tools/hf_to_gguf.py.
#   LLAMA=<llama.cpp build>/bin  GGUF=<folder with tiny-target-bf16.gguf, tiny-target-q8_0.gguf>
cd "$(dirname "$0")/../../../.."
DSPARK=${DSPARK:-build/src/cli/dspark}
P="The history of the city begins in the early years of the century, when"
llama() {
  echo "== llama.cpp round $1"
  "$LLAMA/llama-bench" -m "$GGUF/tiny-target-bf16.gguf" -m "$GGUF/tiny-target-q8_0.gguf" -t 2 -p 1,9 -n 128 -r 5 2>&1 |
    grep '^|'
}
ours() {
  echo "== dspark round $1"
  for q in none int8; do
    echo "plain $q: $($DSPARK generate --model models/tiny-target --prompt "$P" --max-tokens 128 --ignore-eos \
      --threads 2 --quantization $q --repeat 3 2>&1 | grep -o 'decode [0-9.]* tokens/s' | tr '\n' ' ')"
    $DSPARK profile --model models/tiny-target --threads 2 --quantization $q --reprofile --context-length 16 \
      --max-sequences 1 2>&1 | grep -E '^# |^ +(1|9) '
  done
}
for round in 1 2 3; do
  if ((round % 2)); then llama $round; ours $round; else ours $round; llama $round; fi
done
