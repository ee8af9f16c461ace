#!/bin/bash
# int4 with f16 scales (the final format): quality, step costs, products, speculation; from the repository root.
OUT=${OUT:?set OUT to a folder for the outputs}
D=build/src/cli/dspark
E=../shared/data/eval; H=../shared/data/heldout
set -x
$D perplexity --model models/tiny-target --quantization int4 --limit 200 \
  --dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl \
  --dataset $H/specbench_question.jsonl --dataset $H/math500_test.jsonl --dataset $H/aime25.jsonl > $OUT/perplexity_int4.txt 2>&1
for p in 3 9 10 0 0 10 9 3; do
  build/bench/decode_step_bench --benchmark_filter="BM_VerifyOverDecode/path:$p/history:128/" 2>&1 | grep BM_ >> $OUT/verify_over_decode.txt
done
build/bench/kernels_bench --benchmark_filter='BM_LinearSmallM/kind:(5|10)/out:3072/in:512/M:(1|2|5|9|16)/' 2>&1 | grep '^BM_' > $OUT/linear_small_m.txt
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
