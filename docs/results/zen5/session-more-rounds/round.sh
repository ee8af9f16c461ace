# One round (11–13): one greedy and one temperature-1 regeneration with new seeds, the round
# before trained 1,500 more steps on them, the result evaluated (fixed K = 8, 160 prompts per
# file). Run from the repository root; rounds.sh lists the calls that ran.
#   round.sh N PREV_DRAFTER_DIR NAME GREEDY_SEED T1_SEED TRAIN_SEED
set -e
N=$1; PREV=$2; NAME=$3; R=/work/runs/s44; T=build/train/dspark-train
common=(--model models/tiny-target --shards /work/runs/data/tiny --gsm8k 2000 --mbpp -1 --code 3500 --prose 1000
        --max-tokens 128 --max-running 64 --max-batch-tokens 2048 --threads 1)
mkdir -p $R/data$N
$T regen "${common[@]}" --out $R/data$N/regen_greedy.jsonl --seed $4 > $R/regen${N}_greedy.log 2>&1 &
$T regen "${common[@]}" --out $R/data$N/regen_t1.jsonl --temperature 1 --seed $5 > $R/regen${N}_t1.log 2>&1 &
wait
$T draft --target models/tiny-target --data $R/data$N --init-from $PREV --kind dspark \
  --anchors 32 --steps 1500 --warmup 20 --lr 3e-4 --min-lr 3e-5 --batch 8 --seed $6 --save-every 50 \
  --eval-every 500 --threads 2 --log-every 20 --out $R/$NAME > $R/$NAME.log 2>&1
bash docs/results/zen5/session-contextual-markov/eval.sh build/src/cli/dspark $R/eval160 160 $NAME=$R/$NAME/drafter
