#!/bin/bash
# Temperature-1 acceptance of the shipped DSpark drafter with its drafts drawn at draft
# temperature t (needs draft_temperature_patch.diff applied), fixed K = 8, 100 prompts per
# file (MT-Bench: 10 per category), one thread. From the repository root:
#   docs/results/zen5/session-one-row-prefetch/draft_temperature/sweep.sh OUTDIR 0.8 0.9 1.0 1.1
out=$1; shift
for t in "$@"; do
  DSPARK_DRAFT_TEMP=$t build/src/cli/dspark eval --model models/tiny-target --speculator models/tiny-target-dspark \
    --spec-schedule fixed --num-spec-tokens 8 --threads 1 --no-baseline --temperature 1 --limit 100 \
    --dataset ../shared/data/eval/gsm8k_test.jsonl --dataset ../shared/data/eval/humaneval.jsonl \
    --dataset ../shared/data/eval/mbpp.jsonl --dataset ../shared/data/eval/mtbench_question.jsonl 2>&1 |
    tr '\r' '\n' | grep -v "prompts, tau" > "$out/t$t.txt"
done
