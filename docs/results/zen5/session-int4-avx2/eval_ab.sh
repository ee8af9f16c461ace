#!/bin/bash
# dspark eval with AVX2 forced and int4 weights, two builds alternating (order swapped
# each round); DSpark adaptive with the plain baseline beside it; outputs into $OUT.
OUT=${OUT:?set OUT to a folder for the outputs}
OLD=${OLD:?old dspark}; NEW=${NEW:?new dspark}
E=../shared/data/eval
for round in 1 2; do
  if [ $round = 1 ]; then order="old new"; else order="new old"; fi
  for which in $order; do
    D=$OLD; [ $which = new ] && D=$NEW
    $D eval --model models/tiny-target --speculator models/tiny-target-dspark --isa avx2 --quantization int4 \
      --spec-schedule adaptive --reprofile \
      --dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl \
      --limit 20 --max-tokens 128 > $OUT/eval_avx2_int4_${which}_r$round.txt 2>&1
  done
done
echo done
