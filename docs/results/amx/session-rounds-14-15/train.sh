# Round 14 (two arms on the same batches, one thread each, side by side) and round 15.
# models/tiny-target-dspark was round 13 when this ran.
set -e
R=/work/runs/s48; T=build/train/dspark-train
arm() {  # arm NAME EXTRA...
  local name=$1; shift
  $T draft --target models/tiny-target --data $R/data14 --init-from models/tiny-target-dspark "$@" --kind dspark \
    --anchors 32 --steps 1500 --warmup 20 --lr 3e-4 --min-lr 3e-5 --batch 8 --seed 103 --save-every 50 \
    --eval-every 500 --threads 1 --log-every 20 --out $R/$name > $R/train_$name.log 2>&1
}
arm a &                                   # round 14: the shipped shape
arm b --grow-markov-context-size 1024 &   # the contextual Markov MLP 4x wider (256 -> 1024)
wait
$T export --checkpoint $R/a/drafter --out $R/ra --verifier tiny-target
$T export --checkpoint $R/b/drafter --out $R/rb --verifier tiny-target
# data1415: symlinks to data14/regen_{greedy,t1}.jsonl and data15/regen_{greedy,t1}.jsonl
$T draft --target models/tiny-target --data $R/data1415 --init-from $R/a/drafter --kind dspark \
  --anchors 32 --steps 3000 --warmup 20 --lr 3e-4 --min-lr 3e-5 --batch 8 --seed 107 --save-every 50 \
  --eval-every 1000 --threads 2 --log-every 20 --out $R/c > $R/train_c.log 2>&1
$T export --checkpoint $R/c/drafter --out $R/rc --verifier tiny-target
