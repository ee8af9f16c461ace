#!/bin/bash
# Speedup over plain decoding, side by side: dspark eval (adaptive, --reprofile, 20 prompts per
# file, 128 tokens, 2 threads) with round 5 and round 4 alternately, then scripts/demo x3 with
# round 5. Background jobs are paused (SIGSTOP) meanwhile.
cd /work/main
OUT=/work/runs/r17/speed
P=$(pgrep -f 'dspark-eval-bin|engine_eval_prompts_lossless_test' | tr '\n' ' '); [ -n "$P" ] && kill -STOP $P; sleep 1
for i in 1 2; do
  for NP in round5=/work/runs/r17/round5-shipped round4=/work/runs/r17/round4-shipped; do
    name=${NP%%=*}; S=${NP#*=}
    build/src/cli/dspark eval --model models/tiny-target --speculator $S --reprofile --temperature 0 \
      --max-tokens 128 --threads 2 --limit 20 \
      --dataset ../shared/data/eval/gsm8k_test.jsonl --dataset ../shared/data/eval/humaneval.jsonl \
      --dataset ../shared/data/eval/mbpp.jsonl --dataset ../shared/data/eval/mtbench_question.jsonl \
      --json $OUT/eval_${name}_r$i.json > $OUT/eval_${name}_r$i.txt 2>&1
    echo "done eval $name r$i $(date +%T)"
  done
done
for i in 1 2 3; do
  SPECULATOR=/work/runs/r17/round5-shipped bash scripts/demo > $OUT/demo_r$i.txt 2>&1
  echo "done demo r$i $(date +%T): $(grep -i 'speedup' $OUT/demo_r$i.txt | tail -1)"
done
[ -n "$P" ] && kill -CONT $P
