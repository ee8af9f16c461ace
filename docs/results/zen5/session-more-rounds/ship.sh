set -e
cd /work/main
T=build/train/dspark-train
$T export --checkpoint /work/runs/s44/thirteen/drafter --out /work/runs/s44/r13 --verifier tiny-target
$T calibrate --target models/tiny-target --drafter /work/runs/s44/r13 --data /work/runs/s44/data13 \
    --greedy-data /work/runs/s44/data13/regen_greedy.jsonl --sampled-data /work/runs/s44/data13/regen_t1.jsonl \
    --max-sequences 300 --threads 2 > /work/runs/s44/calibrate13.log 2>&1
$T draft-vocab --drafter /work/runs/s44/r13 --target models/tiny-target --data /work/runs/s44/greedy_all --size 2048 --greedy \
    --out /work/runs/s44/r13gv > /work/runs/s44/draft_vocab13.log 2>&1
cp /work/runs/s44/r13gv/{config.json,model.safetensors} /work/runs/s44/r13/calibration.json models/tiny-target-dspark/
bash docs/results/zen5/session-contextual-markov/eval.sh build/src/cli/dspark /work/runs/s44/evalall 100000 shipped=models/tiny-target-dspark
for i in 1 2 3; do bash scripts/demo 2>&1 | grep -v "^\[[0-9]*/[0-9]*\]"; done > /work/runs/s44/demo_final.txt
echo SHIPDONE > /work/runs/s44/ship.done
