# Round 10: round 9 trained 1,500 more steps on two new sampled (T = 1) regenerations.
set -e
cd /work/main
T=build/train/dspark-train
$T draft --target models/tiny-target --data /work/runs/s44/data10 --init-from /work/runs/s43/nine/drafter --kind dspark \
  --anchors 32 --steps 1500 --warmup 20 --lr 3e-4 --min-lr 3e-5 --batch 8 --seed 59 --save-every 50 \
  --eval-every 500 --threads 2 --log-every 20 --out /work/runs/s44/ten > /work/runs/s44/ten.log 2>&1
