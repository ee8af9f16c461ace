#!/bin/bash
# scripts/demo's request (`dspark generate`, the shipped DSpark drafter, median of 5 speculative /
# plain pairs) with one binary under each configuration in turn, ROUNDS times, the order reversed
# every other round; each configuration's step-cost tables (target and drafter) re-measured first.
#   demo_caps.sh DSPARK OUT_FILE ROUNDS CONFIG...   (repository root; nothing else running)
# CONFIG: "name dspark-args...", e.g. "vnni --isa vnni" "fp16 --isa avx512fp16".
BIN=$1; OUT=$2; ROUNDS=$3; shift 3; CONFIGS=("$@")
P="Question: Tom has 3 boxes with 12 apples each. He gives away 7 apples. How many apples does he have left?
Answer:"
for config in "${CONFIGS[@]}"; do
  set -- $config; shift
  "$BIN" profile --model models/tiny-target --reprofile "$@" > /dev/null 2>&1
  "$BIN" profile --model models/tiny-target-dspark --reprofile "$@" > /dev/null 2>&1 || true
done
: > "$OUT"
for ((i = 0; i < ROUNDS; i++)); do
  order=("${CONFIGS[@]}")
  if ((i % 2 == 1)); then order=(); for ((j = ${#CONFIGS[@]} - 1; j >= 0; j--)); do order+=("${CONFIGS[j]}"); done; fi
  for config in "${order[@]}"; do
    set -- $config; name=$1; shift
    echo "== $name" >> "$OUT"
    "$BIN" generate --model models/tiny-target --prompt "$P" --max-tokens 96 --repeat 5 \
      --speculator models/tiny-target-dspark "$@" 2>&1 | grep 'kernels:\|drafter:\|decode\|tau' >> "$OUT"
  done
done
