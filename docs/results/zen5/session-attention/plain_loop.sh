#!/bin/bash
cd /work/main
for i in 1 2 3 4 5; do build/src/cli/dspark generate --model models/tiny-target --prompt "The history of the city begins in the early years of the century, when" --max-tokens 512 --ignore-eos --threads 2 --quantization int8 2>&1 | grep -o "decode [0-9.]* tokens/s"; done
