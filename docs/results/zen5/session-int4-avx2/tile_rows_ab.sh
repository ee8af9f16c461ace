#!/bin/bash
# alternates kernels_bench builds (args) with avx2 forced; prints per-M times
for round in 1 2 3; do
  for b in "$@"; do
    echo -n "$(basename $b) r$round: "
    DSPARK_ISA=avx2 $b --benchmark_filter='BM_LinearSmallM/kind:10/out:3072/in:512/M:(1|2|3|4|5|8|9|16)/stream:1' --benchmark_min_time=0.3 2>&1 | grep ^BM_ | awk '{print $2}' | tr '\n' ' '; echo
  done
done
