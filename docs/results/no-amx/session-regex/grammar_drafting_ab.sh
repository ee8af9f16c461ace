#!/usr/bin/env bash
# Drafting inside the grammar against drafting freely (then cut at the first refused draft),
# on a regex that binds: one reasoning line, then "#### <number>" (the model's own answers
# run to several lines). 20 GSM8K questions, greedy; each `dspark eval` times its own plain
# baseline in the same process. OFF is build/src/cli/dspark rebuilt with
# grammar_drafting_off.patch applied (the engine hands no grammar to the drafter) and
# copied aside; the arms alternate, on then off, then off then on. From the repository root:
#   bash docs/results/no-amx/session-regex/grammar_drafting_ab.sh OFF_BINARY > .../grammar_drafting_ab.txt 2>&1
set -euo pipefail
OFF=$1
REGEX=' [^\n]{1,150}\n#### [0-9]{1,6}'
run() {
  echo "=== $1 speculator $2"
  "$3" eval --model models/tiny-target --speculator "$2" --dataset ../shared/data/eval/gsm8k_test.jsonl \
      --limit 20 --max-tokens 160 --regex "$REGEX" 2>&1 | grep -E '^gsm8k  |^constrained'
}
for spec in models/tiny-target-dspark models/tiny-draft-lm models/tiny-target-eagle3 models/tiny-target-dflash; do
  run on "$spec" build/src/cli/dspark
  run off "$spec" "$OFF"
  run off "$spec" "$OFF"
  run on "$spec" build/src/cli/dspark
done
run on ngram build/src/cli/dspark
