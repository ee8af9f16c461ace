# Two arms from the shipped round-6 drafter, same data, seed, steps and schedule:
#   one -- the shipped 1-layer drafter trained further
#   two -- the same grown to 2 layers, the new layer at 5x the learning rate
set -e
cd /work/main
T=build/train/dspark-train
STEPS=${STEPS:-1500}
common="--target models/tiny-target --data /work/runs/s43/data --init-from models/tiny-target-dspark --kind dspark \
  --anchors 32 --steps $STEPS --warmup 20 --lr 3e-4 --min-lr 3e-5 --batch 8 --seed 47 --save-every 50 \
  --eval-every 500 --threads 1 --log-every 20"
$T draft $common --out /work/runs/s43/one > /work/runs/s43/one.log 2>&1 &
$T draft $common --out /work/runs/s43/two --grow-layers 2 --layer-lr-scale-from 1 --layer-lr-scale 5 > /work/runs/s43/two.log 2>&1 &
wait
