#!/bin/bash
# Every before / after comparison of this section, alternating A B B A, nothing else running:
#   final_ab.sh DSPARK_BEFORE DSPARK_AFTER DSB_BEFORE DSB_AFTER OUT_DIR   (repository root)
# DSB_* are the two builds' bench/decode_step_bench.
A=$1; B=$2; VA=$3; VB=$4; OUT=$5; D=$(dirname "$0")
mkdir -p "$OUT"
bash "$D/../session-huge-pages/vod_ab.sh" "$VA" "$VB" "$OUT/vod.txt"
for q in none int8; do
  for arm in before after after before; do
    if [[ $arm == before ]]; then bin=$A; else bin=$B; fi
    echo "== $arm" >> "$OUT/profile_vnni_$q.txt"
    "$bin" profile --model models/tiny-target --isa vnni --quantization $q --threads 2 --reprofile \
      >> "$OUT/profile_vnni_$q.txt" 2>&1
  done
done
bash "$D/../session-int8-amx/demo_ab.sh" "$A" "$B" "$OUT/demo_vnni.txt" 4 --isa vnni
bash "$D/../session-int8-amx/demo_ab.sh" "$A" "$B" "$OUT/demo_vnni_int8.txt" 4 --isa vnni --quantization int8
bash "$D/../session-int8-amx/demo_ab.sh" "$A" "$B" "$OUT/demo_defaults.txt" 4
for run in "0 none" "1 none" "0 int8"; do
  set -- $run
  n=0
  for arm in before after after before; do
    n=$((n + 1))
    if [[ $arm == before ]]; then bin=$A; else bin=$B; fi
    bash "$D/../session-int8-amx/eval_speed.sh" "$bin" "$OUT/eval_vnni_T$1_$2_${n}_$arm.txt" 20 "$1" --isa vnni --quantization "$2"
  done
done
echo finished >> "$OUT/vod.txt"
