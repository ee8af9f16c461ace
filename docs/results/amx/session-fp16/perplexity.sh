cd "$(git rev-parse --show-toplevel)"
for cfg in "fma512:--isa vnni" "fp16:--isa avx512fp16" "f32:--dtype f32"; do
  name=${cfg%%:*}; args=${cfg#*:}
  echo "== $name ($args)"
  build/src/cli/dspark perplexity --model models/tiny-target $args --limit 200 --dataset ../shared/data/eval/gsm8k_test.jsonl --dataset ../shared/data/eval/humaneval.jsonl --dataset ../shared/data/eval/mbpp.jsonl --dataset ../shared/data/eval/mtbench_question.jsonl --dataset ../shared/data/heldout/specbench_question.jsonl --dataset ../shared/data/heldout/math500_test.jsonl --dataset ../shared/data/heldout/aime25.jsonl 2>&1
done
