#!/bin/bash
# scripts/demo's request on three paths, each binary's step-cost tables re-measured first, then
# session-int8-amx/demo_ab.sh (4 rounds: A B, B A, A B, B A; plain and speculative rates kept).
#   demo_ab.sh BEFORE AFTER OUT_DIR   (repository root; nothing else running)
A=$1; B=$2; OUT=$3; D=$(dirname "$0"); mkdir -p "$OUT"
for config in "defaults" "vnni --isa vnni" "vnni_int8 --isa vnni --quantization int8"; do
  set -- $config; name=$1; shift
  for bin in $A $B; do
    $bin profile --model models/tiny-target --reprofile "$@" > /dev/null 2>&1
    $bin profile --model models/tiny-target-dspark --reprofile "$@" > /dev/null 2>&1 || true
  done
  bash "$D/../session-int8-amx/demo_ab.sh" "$A" "$B" "$OUT/demo_$name.txt" 4 "$@"
done
