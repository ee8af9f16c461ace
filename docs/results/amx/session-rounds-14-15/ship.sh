# Round 15 made shippable: calibrated on its two new regenerations' held-out answers, given a
# greedy vocabulary counted over rounds 14 and 15's greedy answers, int8 at load as before;
# then every eval prompt at both temperatures and scripts/demo three times.
set -e
R=/work/runs/s48; T=build/train/dspark-train
$T calibrate --target models/tiny-target --drafter $R/rc --data $R/data15 \
    --greedy-data $R/data15/regen_greedy.jsonl --sampled-data $R/data15/regen_t1.jsonl \
    --max-sequences 300 --threads 2 > $R/calibrate15.log 2>&1
# greedy_all: symlinks to data14/regen_greedy.jsonl and data15/regen_greedy.jsonl
$T draft-vocab --drafter $R/rc --target models/tiny-target --data $R/greedy_all --size 2048 --greedy \
    --out $R/rcgv > $R/draft_vocab15.log 2>&1
cp $R/rcgv/{config.json,model.safetensors} $R/rc/calibration.json models/tiny-target-dspark/
python3 -c 'import json; p="models/tiny-target-dspark/config.json"; c=json.load(open(p)); c["quantization"]="int8"; json.dump(c, open(p, "w"), indent=2)'
bash docs/results/zen5/session-contextual-markov/eval.sh build/src/cli/dspark $R/evalall 100000 shipped=models/tiny-target-dspark
