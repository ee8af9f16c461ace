#!/bin/bash
# kernels_bench's small-M products (3072 x 512, 1-16 rows, weights hot and streamed from L3;
# fma256, fma512, dpbf16 with bf16 weights and fma512 with f32 weights), min of 3, the two
# builds alternating A B B A, capped at --isa vnni (no AMX):
#   smallm_ab.sh KERNELS_BENCH_BEFORE KERNELS_BENCH_AFTER OUT_FILE   (repository root)
A=$1; B=$2; OUT=$3
: > "$OUT"
for arm in before after after before; do
  if [[ $arm == before ]]; then bin=$A; else bin=$B; fi
  OMP_NUM_THREADS=2 DSPARK_ISA=vnni "$bin" \
    --benchmark_filter='BM_LinearSmallM/kind:(1|2|3|8)/out:3072/in:512/M:(1|4|5|6|8|9|12|16)/' \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>&1 | grep _min |
    awk -v arm=$arm '{split($1, a, "/"); print arm, a[2], a[5], a[6], $2}' >> "$OUT"
done
