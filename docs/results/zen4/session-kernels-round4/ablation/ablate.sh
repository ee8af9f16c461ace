#!/bin/bash
# DSpark recipe ablations at one training budget (400 steps x 8 sequences), then tau per config.
# Runs one after another at 1 thread; each run resumes from its checkpoint if stopped.
cd /work/main
T=build/train/dspark-train; D=/work/runs/r14/data; R=/work/runs/r16
COMMON="--steps 400 --warmup 30 --lr 6e-4 --min-lr 6e-5 --batch 8 --save-every 50 --threads 1 --log-every 20 --eval-every 400 --kind dspark --anchors 32"
run() { # NAME ARGS...
  name=$1; shift
  if [ ! -f $R/$name/drafter/config.json ]; then
    $T draft --target models/tiny-target --data $D --out $R/$name $COMMON "$@" > $R/$name.log 2>&1
  fi
  echo "trained $name $(date +%T)"
  for TT in 0 1; do
    [ -f $R/eval/T$TT-$name.json ] && continue
    mkdir -p $R/eval
    build/src/cli/dspark eval --model models/tiny-target --speculator $R/$name/drafter --num-spec-tokens 8 --spec-schedule fixed \
      --temperature $TT --seed 7 --max-tokens 128 --threads 1 --limit 30 --no-baseline \
      --dataset ../shared/data/eval/gsm8k_test.jsonl --dataset ../shared/data/eval/humaneval.jsonl \
      --dataset ../shared/data/eval/mbpp.jsonl --dataset ../shared/data/eval/mtbench_question.jsonl \
      --json $R/eval/T$TT-$name.json > $R/eval/T$TT-$name.txt 2>&1
  done
  echo "evaluated $name $(date +%T)"
}
run base
run layers2 --layers 2
run rank256 --markov-rank 256
run nomarkov --markov-rank 0
run block16 --block-size 16
run noconf --confidence-head 0
run layers3 --layers 3
echo all done
