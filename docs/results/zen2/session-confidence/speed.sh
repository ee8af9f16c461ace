#!/bin/bash
# Adaptive schedule, confidence adaptation on vs off, alternating; 20 prompts per file, 2 threads.
cd /work/main
B=/tmp/dspark_new
for i in 1 2; do
  for mode in on off; do
    flag=""; [ $mode = off ] && flag=--no-confidence-adaptation
    $B eval --model models/tiny-target --speculator models/tiny-target-dspark --temperature 0 --max-tokens 128 \
      --threads 2 --limit 20 $flag --dataset ../shared/data/eval/{gsm8k_test,humaneval,mbpp,mtbench_question}.jsonl \
      > /work/runs/cal/speed_T0_${mode}_$i.txt 2>&1
  done
done
for mode in on off; do
  flag=""; [ $mode = off ] && flag=--no-confidence-adaptation
  $B eval --model models/tiny-target --speculator models/tiny-target-dspark --temperature 1 --max-tokens 128 \
    --threads 2 --limit 20 $flag --dataset ../shared/data/eval/{gsm8k_test,humaneval,mbpp,mtbench_question}.jsonl \
    > /work/runs/cal/speed_T1_${mode}.txt 2>&1
done
echo done > /work/runs/cal/speed.done
