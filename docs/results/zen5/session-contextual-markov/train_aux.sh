# A third arm beside train.sh's: round 5 grown into a contextual Markov head AND fed the
# target's last layer (aux id 8 = output of decoder layer 7), same data, seed, steps and
# schedule, so its losses compare step by step with the contextual arm.
set -e
cd /work/main
build/train/dspark-train draft --target models/tiny-target --data /work/runs/s42/data --init-from /work/runs/s42/old_dspark \
  --grow-markov-context-size 256 --grow-aux-layers 2 4 6 8 --kind dspark --anchors 32 --steps 1500 --warmup 20 \
  --lr 3e-4 --min-lr 3e-5 --batch 8 --seed 46 --save-every 50 --eval-every 500 --threads 1 --log-every 20 \
  --out /work/runs/s42/aux8
