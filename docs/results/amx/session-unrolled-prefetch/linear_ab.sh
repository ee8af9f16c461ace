#!/bin/bash
# kernels_bench BM_Linear for the bf16 matmul kernels forced under DSPARK_ISA=vnni (fma512,
# kind 2) and avx512bf16 (dpbf16, kind 3), tiny-target's shapes at 1 and 9 rows, caches warm
# (stream:0) and weights streamed (stream:1), A B B A; minimum of 3 repetitions per line.
#   linear_ab.sh KB_BEFORE KB_AFTER OUT_FILE   (repository root; nothing else running)
A=$1; B=$2; OUT=$3
: > "$OUT"
for bin in $A $B $B $A; do
  echo "== $bin" >> "$OUT"
  DSPARK_ISA=vnni OMP_NUM_THREADS=2 $bin --benchmark_filter='BM_Linear/kind:(2|3)/out:(512|1024|3072|8192)/in:(512|1536)/M:(1|9)/' \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>&1 | grep '_min' |
    awk '{sub("/min_time:0.200/real_time_min", "", $1); print $1, $2, $3}' >> "$OUT"
done
