#!/bin/bash
# AVX2 and AVX-VNNI 4-bit products: old build against new, interleaved; outputs into $OUT.
# OLD_BENCH / OLD_STEP / OLD_DSPARK: kernels_bench, decode_step_bench and dspark of the build before.
OUT=${OUT:?set OUT to a folder for the outputs}
OLD_BENCH=${OLD_BENCH:?}; OLD_STEP=${OLD_STEP:?}; OLD_DSPARK=${OLD_DSPARK:?}
E=../shared/data/eval
# 1. one 3072 x 512 product, 1 and 9 rows, hot and streamed: 4-bit on avx2 (old, new), avxvnni (new;
#    the old build runs avx2 there) and the best level; int8 on avx2 and avxvnni beside
for round in 1 2; do
  for isa in avx2 avxvnni; do
    for b in old new; do
      B=$OLD_BENCH; [ $b = new ] && B=build/bench/kernels_bench
      echo "== round $round $b isa $isa" >> $OUT/linear_small_m.txt
      DSPARK_ISA=$isa $B --benchmark_filter='BM_LinearSmallM/kind:(5|10)/out:3072/in:512/M:(1|9)/stream:(0|1)' \
        --benchmark_min_time=0.2 2>&1 | grep ^BM_ >> $OUT/linear_small_m.txt
    done
  done
done
# 2. target steps, 1 and 9 tokens alternating: int8 avx2 (5), avxvnni (6), int4 best (9), avx2 (10), avxvnni (11)
for round in 1 2; do
  for b in old new; do
    S=$OLD_STEP; [ $b = new ] && S=build/bench/decode_step_bench
    echo "== round $round $b" >> $OUT/verify_over_decode.txt
    $S --benchmark_filter='BM_VerifyOverDecode/path:(5|6|9|10|11)/history:128/' 2>&1 | grep ^BM_ >> $OUT/verify_over_decode.txt
  done
done
# 3. DSpark adaptive with AVX-VNNI forced and int4 weights, plain decoding beside, old and new
for round in 1 2; do
  for b in old new; do
    D=$OLD_DSPARK; [ $b = new ] && D=build/src/cli/dspark
    $D eval --model models/tiny-target --speculator models/tiny-target-dspark --isa avxvnni --quantization int4 \
      --spec-schedule adaptive --reprofile \
      --dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl \
      --limit 20 --max-tokens 128 > $OUT/eval/eval_avxvnni_int4_${b}_r$round.txt 2>&1
  done
done
echo done
