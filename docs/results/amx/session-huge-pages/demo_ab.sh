#!/bin/bash
# scripts/demo's request, 4 pages-before / after rounds (A B B A B A A B) per configuration, each binary's
# step-cost table re-measured first; keeps the plain and speculative decode rates beside the speedup.
#   demo_ab.sh BEFORE AFTER OUT_DIR   (repository root; nothing else running)
A=$1; B=$2; OUT=$3; mkdir -p "$OUT"
P="Question: Tom has 3 boxes with 12 apples each. He gives away 7 apples. How many apples does he have left?
Answer:"
for config in "defaults" "vnni --isa vnni" "vnni_int8 --isa vnni --quantization int8"; do
  set -- $config; name=$1; shift
  for bin in $A $B; do
    $bin profile --model models/tiny-target --reprofile "$@" > /dev/null 2>&1
    $bin profile --model models/tiny-target-dspark --reprofile "$@" > /dev/null 2>&1 || true
  done
  : > "$OUT/demo_$name.txt"
  for arm in before after after before after before before after; do
    if [[ $arm == before ]]; then bin=$A; else bin=$B; fi
    echo "== $arm" >> "$OUT/demo_$name.txt"
    "$bin" generate --model models/tiny-target --prompt "$P" --max-tokens 96 --repeat 5 \
      --speculator models/tiny-target-dspark "$@" 2>&1 | grep 'kernels:\|memory:\|decode\|tau' >> "$OUT/demo_$name.txt"
  done
done
