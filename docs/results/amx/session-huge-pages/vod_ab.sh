#!/bin/bash
# decode_step_bench's 1- and 9-token steps of every path (history 128) and the read bandwidth,
# two builds alternating A B B A:   vod_ab.sh DSB_BEFORE DSB_AFTER OUT_FILE   (repository root)
A=$1; B=$2; OUT=$3; : > "$OUT"
for arm in before after after before; do
  if [[ $arm == before ]]; then v=$A; else v=$B; fi
  echo "== $arm" >> "$OUT"
  OMP_NUM_THREADS=2 "$v" --benchmark_filter='BM_VerifyOverDecode/path:[0-9]/history:128|BM_ReadBandwidth' \
    2>&1 | grep '^BM_' >> "$OUT"
done
