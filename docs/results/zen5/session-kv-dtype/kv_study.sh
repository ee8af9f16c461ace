#!/bin/bash
# The KV cache's element type, f32 against bf16, on models/tiny-target (bf16 checkpoint):
# quality (perplexity, tau) and speed (plain decoding at three lengths, speculative eval),
# the two KV types alternately, 2 threads. Writes to the folder given as $1.
cd "$(dirname "$0")/../../../.."
OUT=${1:?output folder}
mkdir -p "$OUT"
DSPARK=${DSPARK:-build/src/cli/dspark}
E=../shared/data/eval; H=../shared/data/heldout
SETS=(--dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl --dataset $E/mbpp.jsonl --dataset $E/mtbench_question.jsonl)
P="The history of the city begins in the early years of the century, when"
# 1. Perplexity, first 200 texts of every eval and held-out file.
for q in none int8; do for kv in f32 bf16; do
  echo "== perplexity quantization $q kv $kv"
  $DSPARK perplexity --model models/tiny-target --threads 2 --quantization $q --kv-dtype $kv --limit 200 \
    "${SETS[@]}" --dataset $H/specbench_question.jsonl --dataset $H/math500_test.jsonl --dataset $H/aime25.jsonl 2>&1
done; done > "$OUT/perplexity.txt"
# 2. Plain decoding speed, 128 / 512 / 960 tokens, 3 rounds, the order of the KV types reversed each round.
for round in 1 2 3; do
  kvs="f32 bf16"; ((round % 2)) || kvs="bf16 f32"
  for n in 128 512 960; do for q in none int8; do for kv in $kvs; do
    echo "round $round tokens $n quantization $q kv $kv: $($DSPARK generate --model models/tiny-target --prompt "$P" \
      --max-tokens $n --ignore-eos --threads 2 --quantization $q --kv-dtype $kv --repeat 3 2>&1 |
      grep -o 'decode [0-9.]* tokens/s')"
  done; done; done
done > "$OUT/decode.txt"
# 3. tau at fixed K = 8 (greedy and temperature 1, no seed), 20 prompts per file, bf16 weights.
for t in 0 1; do for kv in f32 bf16; do
  echo "== fixed K=8 temperature $t kv $kv"
  $DSPARK eval --model models/tiny-target --speculator models/tiny-target-dspark --spec-schedule fixed \
    --num-spec-tokens 8 --temperature $t --max-tokens 128 --threads 2 --limit 20 --kv-dtype $kv --no-baseline \
    "${SETS[@]}" 2>&1 | grep -v '^\[dspark\] prompt'
done; done > "$OUT/tau.txt"
# 4. Speedup, adaptive, greedy, 20 prompts per file, --reprofile (each KV type has its own profile), 2 rounds.
for round in 1 2; do
  kvs="f32 bf16"; ((round % 2)) || kvs="bf16 f32"
  for q in none int8; do for kv in $kvs; do
    echo "=== round $round quantization $q kv $kv"
    $DSPARK eval --model models/tiny-target --speculator models/tiny-target-dspark --temperature 0 \
      --max-tokens 128 --threads 2 --limit 20 --quantization $q --kv-dtype $kv --reprofile "${SETS[@]}" 2>&1 |
      grep -v 'prompts, tau' | grep -v '^\[dspark\] prompt'
  done; done
done > "$OUT/eval_speedup.txt"
echo done > "$OUT/DONE"
