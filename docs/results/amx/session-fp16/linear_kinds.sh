#!/bin/bash
# kernels_bench BM_Linear for the bf16 kernels fma512 (kind 2) and fp16 (kind 9) on its shapes
# (512 x 512, 1536 x 512, 3072 x 512, 512 x 1536 and the 8192 x 512 LM head) at 1 and 9 rows, weights
# hot in cache (stream 0) and streamed (1), in the order 2 9 9 2, minimum of 3 repetitions per line:
# prints "kind:K/out:O/in:I/M:R/stream:S microseconds".
#   linear_kinds.sh KERNELS_BENCH   (repository root; nothing else running)
KB=$1
for kind in 2 9 9 2; do
  "$KB" --benchmark_filter="BM_Linear/kind:$kind/.*/M:(1|9)/" --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true 2>/dev/null |
    awk '/_min/ {sub(/^BM_Linear\//, "", $1); sub(/\/min_time.*/, "", $1); printf "%s %.1f\n", $1, $2 / 1000}'
done
