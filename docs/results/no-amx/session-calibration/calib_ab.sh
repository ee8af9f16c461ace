#!/bin/bash
# dspark eval (greedy unless TEMPERATURE is set, adaptive, the shipped DSpark drafter, 20 prompts of each eval file,
# plain decoding in the same run) with two builds alternating A B B A per round, under each
# weight format: OLD = before the change, NEW = with it.
#   calib_ab.sh OLD NEW OUT_DIR ROUNDS   (repository root)
OLD=$1; NEW=$2; OUT=$3; ROUNDS=$4; mkdir -p "$OUT"; E=../shared/data/eval
run() {  # binary name file extra...
  local bin=$1 out=$2; shift 2
  "$bin" eval --model models/tiny-target --speculator models/tiny-target-dspark --temperature "${TEMPERATURE:-0}" \
    --max-tokens 128 --threads 2 --limit 20 --dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl \
    --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl "$@" 2>&1 | tr '\r' '\n' | grep -v "prompts, tau" > "$out"
}
n=0
for ((i = 0; i < ROUNDS; i++)); do
  for fmt in ${FORMATS:-bf16 int8}; do
    extra=(); [[ $fmt == int8 ]] && extra=(--quantization int8)
    for which in old new new old; do
      n=$((n + 1)); bin=$OLD; [[ $which == new ]] && bin=$NEW
      run "$bin" "$OUT/${n}_${fmt}_${which}.txt" "${extra[@]}"
    done
  done
done
