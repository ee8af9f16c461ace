#!/bin/bash
# int4 with the scale search: speculation with int8 and int4 drafters, step costs; from the repository root.
OUT=${OUT:?set OUT to a folder for the outputs}
D=build/src/cli/dspark
E=../shared/data/eval
set -x
for p in 3 9 10 0 0 10 9 3; do
  build/bench/decode_step_bench --benchmark_filter="BM_VerifyOverDecode/path:$p/history:128/" 2>&1 | grep BM_ >> $OUT/verify_over_decode.txt
done
for round in 1 2; do
  for v in "int8 auto" "int4 auto" "int4 int4" "none auto"; do
    set -- $v
    for s in fixed adaptive; do
      $D eval --model models/tiny-target --speculator models/tiny-target-dspark --quantization $1 --draft-quantization $2 \
        --spec-schedule $s --dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl --dataset $E/mbpp.jsonl \
        --dataset $E/mtbench_question.jsonl --limit 20 --max-tokens 128 > $OUT/eval_${1}_draft-${2}_${s}_r$round.txt 2>&1
    done
  done
done
echo done
