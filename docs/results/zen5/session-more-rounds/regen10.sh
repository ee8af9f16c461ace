set -e
cd /work/main
T=build/train/dspark-train
# Round 10's data: two sampled (T = 1) files, new seeds.
$T regen --model models/tiny-target --shards /work/runs/data/tiny --out /work/runs/s44/data10/regen_t1a.jsonl \
  --temperature 1 --seed 61 --gsm8k 2000 --mbpp -1 --code 3500 --prose 1000 --max-tokens 128 --max-running 64 \
  --max-batch-tokens 2048 --threads 1 > /work/runs/s44/regen10_a.log 2>&1 &
$T regen --model models/tiny-target --shards /work/runs/data/tiny --out /work/runs/s44/data10/regen_t1b.jsonl \
  --temperature 1 --seed 62 --gsm8k 2000 --mbpp -1 --code 3500 --prose 1000 --max-tokens 128 --max-running 64 \
  --max-batch-tokens 2048 --threads 1 > /work/runs/s44/regen10_b.log 2>&1 &
wait
