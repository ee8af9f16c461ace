#!/bin/bash
# kernels_bench BM_LinearSmallM, 3072 x 512, fma512 (kind 2) and int8 (kind 5) under DSPARK_ISA=vnni, 1/5/9/12 rows,
# hot and streamed, two builds A B B A:   smallm_ab.sh KB_BEFORE KB_AFTER OUT_FILE   (repository root)
A=$1; B=$2; OUT=$3; : > "$OUT"
for arm in before after after before; do
  if [[ $arm == before ]]; then kb=$A; else kb=$B; fi
  echo "== $arm" >> "$OUT"
  DSPARK_ISA=vnni OMP_NUM_THREADS=2 "$kb" --benchmark_filter='BM_LinearSmallM/kind:(2|5)/out:3072/in:512/M:(1|5|9|12)/' \
    2>&1 | grep '^BM_' | awk '{print $1, $2, $3}' >> "$OUT"
done
