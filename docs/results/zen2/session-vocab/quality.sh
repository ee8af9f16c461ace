#!/bin/bash
# Fixed K = 8: acceptance of the drafter without a draft vocabulary ("full": the drafter
# before this change), with the shipped greedy vocabulary ("greedy"), and reduced for every
# request ("every2048", "every4096": dspark-train draft-vocab without --greedy, counted on
# both answer files). Greedy: 40 prompts per file; temperature 1: 20 per file, --seed 1.
cd /work/main
OUT=${OUT:-/work/runs/vocab}
FULL=${FULL:-/work/runs/vocab/full}
EVAL="build/src/cli/dspark eval --model models/tiny-target --max-tokens 128 --threads 2 --spec-schedule fixed --no-baseline"
DATA="--dataset ../shared/data/eval/gsm8k_test.jsonl --dataset ../shared/data/eval/humaneval.jsonl --dataset ../shared/data/eval/mbpp.jsonl --dataset ../shared/data/eval/mtbench_question.jsonl"
for mode in full greedy; do
  spec=$FULL; [ $mode = greedy ] && spec=models/tiny-target-dspark
  $EVAL --speculator $spec --temperature 0 --limit 40 $DATA --json $OUT/fixed_T0_$mode.json > $OUT/fixed_T0_$mode.txt 2>&1
done
for mode in full greedy every2048 every4096; do
  spec=$FULL; [ $mode = greedy ] && spec=models/tiny-target-dspark
  [ $mode = every2048 ] && spec=/work/runs/dv/v2048; [ $mode = every4096 ] && spec=/work/runs/dv/v4096
  $EVAL --speculator $spec --temperature 1 --seed 1 --limit 20 $DATA --json $OUT/fixed_T1_$mode.json > $OUT/fixed_T1_$mode.txt 2>&1
done
# Temperature 1 without a seed (the standard speculative-sampling rule instead of the coupled
# rule of seeded requests, spec/rejection_sampler.h), the shipped drafter. (dspark eval draws
# each request's stream from a fixed default seed, so a second run repeats the first exactly.)
for i in 1; do
  $EVAL --speculator models/tiny-target-dspark --temperature 1 --limit 20 $DATA --json $OUT/fixed_T1_unseeded_$i.json \
    > $OUT/fixed_T1_unseeded_$i.txt 2>&1
done
