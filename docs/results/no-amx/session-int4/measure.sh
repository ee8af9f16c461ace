#!/bin/bash
# int4 measurements; run from the repository root; outputs into $OUT.
OUT=${OUT:?set OUT to a folder for the outputs}
D=build/src/cli/dspark
E=../shared/data/eval; H=../shared/data/heldout
set -x
# 1. perplexity, first 200 texts of each eval and held-out file
for q in none int8 int4; do
  $D perplexity --model models/tiny-target --quantization $q --limit 200 \
    --dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl \
    --dataset $H/specbench_question.jsonl --dataset $H/math500_test.jsonl --dataset $H/aime25.jsonl > $OUT/perplexity_$q.txt 2>&1
done
# 2. step costs, 1 and 9 tokens alternating, bf16 / int8 / int4 (twice, opposite order)
for p in 0 3 9 9 3 0; do
  build/bench/decode_step_bench --benchmark_filter="BM_VerifyOverDecode/path:$p/history:128/" 2>&1 | grep BM_ >> $OUT/verify_over_decode.txt
done
# 3. one product, 1..9 rows, hot and streamed, int8 (5) against int4 (10)
build/bench/kernels_bench --benchmark_filter='BM_LinearSmallM/kind:(5|10)/out:3072/in:512/M:(1|2|5|9|16)/' 2>&1 | grep BM_ > $OUT/linear_small_m.txt
# 4. DSpark fixed K = 8 and adaptive, 20 prompts per eval file, plain baseline beside
for q in int8 int4 none int4 int8; do
  for s in fixed adaptive; do
    $D eval --model models/tiny-target --speculator models/tiny-target-dspark --quantization $q --spec-schedule $s \
      --dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl \
      --limit 20 --max-tokens 128 > $OUT/eval_${q}_${s}_$(date +%s).txt 2>&1
  done
done
echo done
