#!/bin/bash
# Speedup over plain decoding, side by side: dspark eval (adaptive, --reprofile, 20 prompts per
# file, 128 tokens, 2 threads) with round 5 and round 4 alternately, then scripts/demo x3 with
# round 5. Background jobs are paused (SIGSTOP) meanwhile. ROUND4 / ROUND5: drafter directories
# (round 4 is the models/tiny-target-dspark of commit d43a6a9).
cd "$(dirname "$0")/../../../../.."  # the repository root
OUT=${OUT:-/tmp/dspark-speed}; mkdir -p $OUT
ROUND5=${ROUND5:-models/tiny-target-dspark}; ROUND4=${ROUND4:?set ROUND4 to round 4's drafter directory}
P=$(pgrep -f 'dspark-eval-bin|engine_eval_prompts_lossless_test' | tr '\n' ' '); [ -n "$P" ] && kill -STOP $P; sleep 1
for i in 1 2; do
  for NP in round5=$ROUND5 round4=$ROUND4; do
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
  SPECULATOR=$ROUND5 bash scripts/demo > $OUT/demo_r$i.txt 2>&1
  echo "done demo r$i $(date +%T): $(grep -i 'speedup' $OUT/demo_r$i.txt | tail -1)"
done
[ -n "$P" ] && kill -CONT $P
