# The regenerations of rounds 14 and 15: one greedy and one temperature-1 file each, side by
# side on one thread each (repository root; /work/runs/s48 is the runs' scratch space).
#   regen.sh DIR GREEDY_SEED T1_SEED        (data14: 101 102, data15: 105 106)
set -e
D=$1; T=build/train/dspark-train; mkdir -p $D
common=(--model models/tiny-target --shards /work/runs/data/tiny --gsm8k 2000 --mbpp -1 --code 3500 --prose 1000
        --max-tokens 128 --max-running 64 --max-batch-tokens 2048 --threads 1)
$T prepare --tokenizer models/tiny-target --shared-dir ../shared --out /work/runs/data/tiny
$T regen "${common[@]}" --out $D/regen_greedy.jsonl --seed $2 > $D.greedy.log 2>&1 &
$T regen "${common[@]}" --out $D/regen_t1.jsonl --temperature 1 --seed $3 > $D.t1.log 2>&1 &
wait
