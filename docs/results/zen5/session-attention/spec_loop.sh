#!/bin/bash
# speculative int8 generation on a gsm8k prompt, 256 tokens, 12 times
cd /work/main
P="Question: $(python3 -c "import json;print(json.loads(open('../shared/data/eval/gsm8k_test.jsonl').readline())['question'])")
Answer:"
for i in $(seq 1 ${N:-12}); do
build/src/cli/dspark generate --model models/tiny-target --prompt "$P" --max-tokens 256 --ignore-eos --threads 2 --quantization int8 --speculator models/tiny-target-dspark ${EXTRA} 2>&1 | grep "speculative\|tau"
done
