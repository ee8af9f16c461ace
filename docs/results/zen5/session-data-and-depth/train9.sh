# Round 9 (measured, not shipped): round 8 trained 1,500 more steps on a third regeneration, MBPP answered greedily again.
set -e
cd /work/main
T=build/train/dspark-train
$T draft --target models/tiny-target --data /work/runs/s43/data9 --init-from /work/runs/s43/eight/drafter --kind dspark \
  --anchors 32 --steps 1500 --warmup 20 --lr 3e-4 --min-lr 3e-5 --batch 8 --seed 49 --save-every 50 \
  --eval-every 500 --threads 2 --log-every 20 --out /work/runs/s43/nine > /work/runs/s43/nine.log 2>&1
