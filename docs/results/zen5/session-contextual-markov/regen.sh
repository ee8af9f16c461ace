set -e
cd /work/main
T=build/train/dspark-train
$T regen --model models/tiny-target --shards /work/runs/data/tiny --out /work/runs/s42/data/regen_greedy.jsonl \
  --seed 21 --gsm8k 2000 --mbpp -1 --code 3500 --prose 1000 --max-tokens 128 --max-running 64 --max-batch-tokens 2048 --threads 1
$T regen --model models/tiny-target --shards /work/runs/data/tiny --out /work/runs/s42/data/regen_t1.jsonl \
  --temperature 1 --seed 22 --gsm8k 2000 --mbpp -1 --code 3500 --prose 1000 --max-tokens 128 --max-running 64 \
  --max-batch-tokens 2048 --threads 1
