# Two arms from the shipped drafter, same data, seed, steps and schedule:
#   vanilla    -- the shipped vanilla Markov head trained further
#   contextual -- the same, grown into a contextual Markov head (MLP width 256, W_out = 0 at first)
set -e
cd /work/main
T=build/train/dspark-train
STEPS=${STEPS:-1500}
common="--target models/tiny-target --data /work/runs/s42/data --init-from models/tiny-target-dspark --kind dspark \
  --anchors 32 --steps $STEPS --warmup 20 --lr 3e-4 --min-lr 3e-5 --batch 8 --seed 46 --save-every 50 \
  --eval-every 500 --threads 1 --log-every 20"
$T draft $common --out /work/runs/s42/vanilla > /work/runs/s42/vanilla.log 2>&1 &
$T draft $common --out /work/runs/s42/contextual --grow-markov-context-size 256 > /work/runs/s42/contextual.log 2>&1 &
wait
