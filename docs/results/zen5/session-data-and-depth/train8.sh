# Round 8: round 7 (the 1-layer arm "one") trained 1,500 more steps on a second new regeneration.
set -e
cd /work/main
T=build/train/dspark-train
$T draft --target models/tiny-target --data /work/runs/s43/data8 --init-from /work/runs/s43/one/drafter --kind dspark \
  --anchors 32 --steps 1500 --warmup 20 --lr 3e-4 --min-lr 3e-5 --batch 8 --seed 48 --save-every 50 \
  --eval-every 500 --threads 2 --log-every 20 --out /work/runs/s43/eight > /work/runs/s43/eight.log 2>&1
