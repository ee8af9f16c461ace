# DFlash and the draft LM trained on the four regenerations DSpark rounds 10-13 trained on.
#   fair.sh STEPS   (repository root)
cd /work/main
T=build/train/dspark-train; R=/work/runs/s45; S=$1
$T draft --target models/tiny-target --data $R/union --init-from models/tiny-target-dflash --kind dflash \
  --anchors 32 --steps $S --warmup 20 --lr 3e-4 --min-lr 3e-5 --batch 8 --seed 71 --save-every 50 \
  --eval-every 1000 --threads 1 --log-every 20 --out $R/dflash > $R/dflash.log 2>&1 &
$T draft-lm --target models/tiny-target --data $R/union --init-from models/tiny-draft-lm \
  --steps $S --warmup 20 --lr 3e-4 --min-lr 3e-5 --batch 8 --seed 71 --save-every 50 \
  --eval-every 1000 --threads 1 --log-every 20 --out $R/draftlm > $R/draftlm.log 2>&1 &
wait
