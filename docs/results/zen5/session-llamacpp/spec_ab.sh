#!/bin/bash
# Speculative decoding of scripts/demo's request, greedy, 2 threads, bf16: llama.cpp's
# llama-speculative with tiny-draft-lm (up to 8 drafts a round) beside dspark with the same
# draft LM (fixed K = 8) and with the shipped DSpark drafter (adaptive), 3 alternating rounds.
#   LLAMA=<llama.cpp build>/bin  GGUF=<folder with tiny-target-bf16.gguf, tiny-draft-lm-bf16.gguf>
cd "$(dirname "$0")/../../../.."
DSPARK=${DSPARK:-build/src/cli/dspark}
D="Question: Tom has 3 boxes with 12 apples each. He gives away 7 apples. How many apples does he have left?
Answer:"
for round in 1 2 3; do
  echo "== round $round"
  echo "llama.cpp draft LM: $("$LLAMA/llama-speculative" -m "$GGUF/tiny-target-bf16.gguf" -md "$GGUF/tiny-draft-lm-bf16.gguf" \
    -p "$D" -n 96 -t 2 --temp 0 --draft-max 8 -c 1024 2>&1 | grep -E '^decoded|^n_drafted|^n_accept' | tr '\n' ' ')"
  echo "dspark draft LM K=8: $($DSPARK generate --model models/tiny-target --prompt "$D" --max-tokens 96 --threads 2 \
    --speculator models/tiny-draft-lm --spec-schedule fixed --num-spec-tokens 8 --repeat 3 2>&1 |
    grep -o 'speculative: .*decode [0-9.]* tokens/s\|plain      : .*decode [0-9.]* tokens/s\|tau [0-9.]*\|speedup over plain: [0-9.]*x' | sed 's/prompt.*decode/decode/' | tr '\n' ' ')"
  echo "dspark DSpark adaptive: $($DSPARK generate --model models/tiny-target --prompt "$D" --max-tokens 96 --threads 2 \
    --speculator models/tiny-target-dspark --repeat 3 2>&1 |
    grep -o 'speculative: .*decode [0-9.]* tokens/s\|plain      : .*decode [0-9.]* tokens/s\|tau [0-9.]*\|speedup over plain: [0-9.]*x' | sed 's/prompt.*decode/decode/' | tr '\n' ' ')"
done
