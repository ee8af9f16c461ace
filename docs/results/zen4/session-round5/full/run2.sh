#!/bin/bash
# Every prompt of the eval sets, fixed K=8, one thread, no baseline.
# Modes: T0 (greedy), T1std (temperature 1, standard rejection sampling: no --seed).
# usage: run2.sh MODE:NAME=PATH...
cd "$(dirname "$0")/../../../../.."  # the repository root
OUT=${OUT:-/tmp/dspark-full-eval}; mkdir -p $OUT
for MNP in "$@"; do
  mode=${MNP%%:*}; NP=${MNP#*:}; name=${NP%%=*}; S=${NP#*=}
  [ -f $OUT/$mode-$name.json ] && continue
  case $mode in
    T0) samp="--temperature 0 --seed 7";;
    T1std) samp="--temperature 1";;
  esac
  nice -n 5 build/src/cli/dspark eval --model models/tiny-target --speculator $S --num-spec-tokens 8 --spec-schedule fixed \
    $samp --max-tokens 128 --threads 1 --limit 0 --no-baseline \
    --dataset ../shared/data/eval/gsm8k_test.jsonl --dataset ../shared/data/eval/humaneval.jsonl \
    --dataset ../shared/data/eval/mbpp.jsonl --dataset ../shared/data/eval/mtbench_question.jsonl \
    --json $OUT/$mode-$name.json > $OUT/$mode-$name.txt 2>&1
  echo "done $mode $name $(date +%T)"
done
