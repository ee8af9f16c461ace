#!/bin/bash
# The adaptive schedule's plan before (OLD_DSPARK, the build of 7e31344) and after (this
# build): dspark eval on the five eval domains, 20 prompts per file, 128 tokens, old and new
# alternating A B B A per configuration, nothing else running. Outputs into $OUT.
OUT=${OUT:?set OUT to a folder for the outputs}
OLD_DSPARK=${OLD_DSPARK:?set OLD_DSPARK to the dspark binary built before the change}
E=../shared/data/eval
run() {  # run LABEL BUILD ROUND EXTRA...
  local label=$1 b=$2 round=$3; shift 3
  local d=$OLD_DSPARK; [ "$b" = new ] && d=build/src/cli/dspark
  local json=(); [ "$b" = new ] && json=(--json "$OUT/${label}_${b}_${round}.json")
  "$d" eval --model models/tiny-target --speculator models/tiny-target-dspark --spec-schedule adaptive \
    --dataset $E/gsm8k_test.jsonl --dataset $E/humaneval.jsonl --dataset $E/mbpp.jsonl \
    --dataset $E/mtbench_question.jsonl --limit 20 --max-tokens 128 "${json[@]}" "$@" \
    > "$OUT/${label}_${b}_${round}.txt" 2>&1
}
for cfg in "greedy_bf16:--temperature 0" "t1_bf16:--temperature 1" "greedy_int8:--quantization int8" \
           "greedy_fma512:--isa avx512" "greedy_avx2_int4:--isa avx2 --quantization int4" \
           "greedy_avxvnni_int4:--isa avxvnni --quantization int4"; do
  label=${cfg%%:*}; extra=${cfg#*:}
  run "$label" new 1 $extra; run "$label" old 1 $extra; run "$label" old 2 $extra; run "$label" new 2 $extra
done
# scripts/demo's request, old and new alternating (each line: the median of 5 pairs).
P="Question: Tom has 3 boxes with 12 apples each. He gives away 7 apples. How many apples does he have left?
Answer:"
for round in 1 2; do
  for b in new old; do
    d=$OLD_DSPARK; [ "$b" = new ] && d=build/src/cli/dspark
    echo "== round $round $b" >> "$OUT/demo_ab.txt"
    "$d" generate --model models/tiny-target --prompt "$P" --max-tokens 96 --repeat 5 \
      --speculator models/tiny-target-dspark 2>&1 | grep '^\[dspark\]' >> "$OUT/demo_ab.txt"
  done
done
echo done
