#!/usr/bin/env bash
# Every speculator on 20 GSM8K questions, greedy, unconstrained and under a regex for the
# answers' format (reasoning lines, then "#### <number>"), run from the repository root:
#   bash docs/results/no-amx/session-regex/eval_drafters.sh > docs/results/no-amx/session-regex/eval_drafters.txt 2>&1
set -euo pipefail
REGEX=' [^\n]+(\n[^\n]+){0,7}\n#### -?[0-9,]+'
for spec in models/tiny-target-dspark models/tiny-target-dflash models/tiny-draft-lm models/tiny-target-eagle3 ngram; do
  for constraint in none regex; do
    args=()
    if [[ $constraint == regex ]]; then args=(--regex "$REGEX"); fi
    echo "=== speculator $spec, constraint $constraint"
    build/src/cli/dspark eval --model models/tiny-target --speculator "$spec" \
        --dataset ../shared/data/eval/gsm8k_test.jsonl --limit 20 --max-tokens 160 "${args[@]}" 2>&1 | grep -v '^\[dspark\] step'
  done
done
