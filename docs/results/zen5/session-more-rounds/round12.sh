set -e
cd /work/main
T=build/train/dspark-train
# Round 12's data: one greedy and one sampled file, new seeds.
$T regen --model models/tiny-target --shards /work/runs/data/tiny --out /work/runs/s44/data12/regen_greedy.jsonl \
  --seed 81 --gsm8k 2000 --mbpp -1 --code 3500 --prose 1000 --max-tokens 128 --max-running 64 --max-batch-tokens 2048 --threads 1 > /work/runs/s44/regen12_greedy.log 2>&1 &
$T regen --model models/tiny-target --shards /work/runs/data/tiny --out /work/runs/s44/data12/regen_t1.jsonl \
  --temperature 1 --seed 82 --gsm8k 2000 --mbpp -1 --code 3500 --prose 1000 --max-tokens 128 --max-running 64 \
  --max-batch-tokens 2048 --threads 1 > /work/runs/s44/regen12_t1.log 2>&1 &
wait
# Round 12: round 11 trained 1,500 more steps on them.
$T draft --target models/tiny-target --data /work/runs/s44/data12 --init-from /work/runs/s44/eleven/drafter --kind dspark \
  --anchors 32 --steps 1500 --warmup 20 --lr 3e-4 --min-lr 3e-5 --batch 8 --seed 79 --save-every 50 \
  --eval-every 500 --threads 2 --log-every 20 --out /work/runs/s44/twelve > /work/runs/s44/twelve.log 2>&1
bash docs/results/zen5/session-contextual-markov/eval.sh build/src/cli/dspark /work/runs/s44/eval160 160 twelve=/work/runs/s44/twelve/drafter
