#!/bin/bash
# kernels_bench's verification attention (tiny-target's heads; 1 and 9 query tokens over 128 and 896
# cached positions; f32 and bf16 KV; caches warm), two builds alternating A B B A, under
# DSPARK_ISA=vnni (the AVX-512 tile) and DSPARK_ISA=avx2 (the 8-lane tile), 2 threads:
#   attention_ab.sh KB_BEFORE KB_AFTER OUT_FILE   (repository root; nothing else running)
A=$1; B=$2; OUT=$3; : > "$OUT"
for isa in vnni avx2; do
  for arm in before after after before; do
    if [[ $arm == before ]]; then bin=$A; else bin=$B; fi
    echo "== $arm $isa" >> "$OUT"
    DSPARK_ISA=$isa OMP_NUM_THREADS=2 "$bin" --benchmark_filter='BM_AttentionVerify/tokens:(1|9)/len:(128|896)/bf16:(0|1)/cold:0' \
      --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>&1 | grep '_min ' >> "$OUT"
  done
done
