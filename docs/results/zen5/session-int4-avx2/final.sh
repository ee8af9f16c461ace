#!/bin/bash
# The final code against the build before: target steps and dspark eval (AVX2 and AVX-VNNI
# forced, int4 weights), interleaved, order swapped each round; outputs into $OUT.
OUT=${OUT:?set OUT to a folder for the outputs}
OLD_STEP=${OLD_STEP:?}; OLD_DSPARK=${OLD_DSPARK:?}
E=../shared/data/eval
for round in 1 2; do
  if [ $round = 1 ]; then order="old new"; else order="new old"; fi
  for b in $order; do
    S=$OLD_STEP; [ $b = new ] && S=build/bench/decode_step_bench
    echo "== round $round $b" >> $OUT/final_verify_over_decode.txt
    $S --benchmark_filter='BM_VerifyOverDecode/path:(5|6|9|10|11)/history:128/' 2>&1 | grep ^BM_ >> $OUT/final_verify_over_decode.txt
  done
done
for isa in avx2 avxvnni; do
  for b in old new; do
    D=$OLD_DSPARK; [ $b = new ] && D=build/src/cli/dspark
    $D eval --model models/tiny-target --speculator models/tiny-target-dspark --isa $isa --quantization int4 \
      --spec-schedule adaptive --reprofile \
      --dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl \
      --limit 20 --max-tokens 128 > $OUT/eval/final_eval_${isa}_int4_${b}.txt 2>&1
  done
done
echo done
