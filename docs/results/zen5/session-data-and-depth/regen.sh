set -e
cd /work/main
T=build/train/dspark-train
$T regen --model models/tiny-target --shards /work/runs/data/tiny --out /work/runs/s43/data/regen_greedy.jsonl \
  --seed 31 --gsm8k 2000 --mbpp 0 --code 3500 --prose 1000 --max-tokens 128 --max-running 64 --max-batch-tokens 2048 --threads 1 > /work/runs/s43/regen_greedy.log 2>&1 &
$T regen --model models/tiny-target --shards /work/runs/data/tiny --out /work/runs/s43/data/regen_t1.jsonl \
  --temperature 1 --seed 32 --gsm8k 2000 --mbpp -1 --code 3500 --prose 1000 --max-tokens 128 --max-running 64 \
  --max-batch-tokens 2048 --threads 1 > /work/runs/s43/regen_t1.log 2>&1 &
wait
# Round 8's data (after the arms above finished; same sizes, new seeds):
$T regen --model models/tiny-target --shards /work/runs/data/tiny --out /work/runs/s43/data8/regen_greedy.jsonl \
  --seed 41 --gsm8k 2000 --mbpp 0 --code 3500 --prose 1000 --max-tokens 128 --max-running 64 --max-batch-tokens 2048 --threads 1
$T regen --model models/tiny-target --shards /work/runs/data/tiny --out /work/runs/s43/data8/regen_t1.jsonl \
  --temperature 1 --seed 42 --gsm8k 2000 --mbpp -1 --code 3500 --prose 1000 --max-tokens 128 --max-running 64 \
  --max-batch-tokens 2048 --threads 1
# Round 9's data (MBPP answered greedily again):
$T regen --model models/tiny-target --shards /work/runs/data/tiny --out /work/runs/s43/data9/regen_greedy.jsonl \
  --seed 51 --gsm8k 2000 --mbpp -1 --code 3500 --prose 1000 --max-tokens 128 --max-running 64 --max-batch-tokens 2048 --threads 1
$T regen --model models/tiny-target --shards /work/runs/data/tiny --out /work/runs/s43/data9/regen_t1.jsonl \
  --temperature 1 --seed 52 --gsm8k 2000 --mbpp -1 --code 3500 --prose 1000 --max-tokens 128 --max-running 64 \
  --max-batch-tokens 2048 --threads 1
