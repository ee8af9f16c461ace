#!/bin/bash
# decode_step_bench BM_VerifyOverDecode (1- and 9-token steps alternating, medians and their ratio) at
# 128 positions for the paths bf16 avx512 (fma512, path 2), bf16 avx512fp16 (fp16, path 8) and int8
# vnni (vnni512, path 3), ROUNDS times in the order 2 8 3 / 3 8 2:
#   dsb_paths.sh DECODE_STEP_BENCH ROUNDS   (repository root; nothing else running)
B=$1; N=${2:-3}
for r in $(seq "$N"); do
  if ((r % 2)); then order="2 8 3"; else order="3 8 2"; fi
  for p in $order; do
    OMP_NUM_THREADS=2 "$B" --benchmark_filter="BM_VerifyOverDecode/path:$p/history:128/" 2>&1 | grep '^BM_' |
      awk '{x=""; for (i = 1; i <= NF; i++) if ($i ~ /^t[19]_ms=/ || $i ~ /^t9\/t1=/) x = x " " $i; print $1, x}'
  done
done
