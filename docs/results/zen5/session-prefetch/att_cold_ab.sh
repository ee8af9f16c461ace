#!/bin/bash
# BM_AttentionVerify at 896 keys, hot and cold (64 MB read between calls), f32 and bf16 KV,
# the kernels_bench before the KV prefetch (kb_base: commit 455c832 with this commit's kernels_bench) and after
# (kb_pf64), alternately, order reversed every other round; THREADS threads.
B=${BIN:-/work/runs/s37}
for round in 1 2 3; do
  bins="kb_base kb_pf64"; ((round % 2)) || bins="kb_pf64 kb_base"
  for b in $bins; do
    OMP_NUM_THREADS=${THREADS:-2} $B/$b --benchmark_filter='BM_AttentionVerify/tokens:(1|9)/len:896' \
      --benchmark_min_time=0.3 2>&1 | grep '^BM_' | awk -v r=$round -v b=$b '{print r, b, $1, $2, $3}'
  done
done
