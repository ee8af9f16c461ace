#!/bin/bash
# decode_step_bench BM_VerifyOverDecode (1- and 9-token steps alternating, medians and their ratio) at
# 128 positions for the paths bf16 best (0), bf16 avx2 (1), int8 vnni (3) and int8 avx2 (5), ROUNDS
# times in the order 0 3 1 5 / 5 1 3 0:
#   dsb_paths.sh DECODE_STEP_BENCH ROUNDS   (repository root; nothing else running)
B=$1; N=${2:-3}
for r in $(seq "$N"); do
  if ((r % 2)); then order="0 3 1 5"; else order="5 1 3 0"; fi
  for p in $order; do
    OMP_NUM_THREADS=2 "$B" --benchmark_filter="BM_VerifyOverDecode/path:$p/history:128/" 2>&1 | grep '^BM_' |
      awk '{x=""; for (i = 1; i <= NF; i++) if ($i ~ /^t[19]_ms=/ || $i ~ /^t9\/t1=/) x = x " " $i; print $1, x}'
  done
done
