#!/bin/bash
# A cached step-cost table measured while the machine was busy for part of it: the fresh
# int8 table (--isa vnni) with every multi-token step made 15% slower (SPS(B >= 2) x 0.85),
# rewritten before each run, then `dspark eval` (eval_speed.sh, greedy, 20 prompts per file)
# with the build before the shape check (OLD: keeps the table) and after it (NEW: measures
# again), alternating A B B A:
#   skewed_table_ab.sh DSPARK_OLD DSPARK_NEW OUT_DIR   (repository root)
A=$1; B=$2; OUT=$3; D=$(dirname "$0")
mkdir -p "$OUT"
CACHE=${DSPARK_CACHE_DIR:-$HOME/.cache/dspark}/step_profile
bash "$D/../session-int8-amx/eval_speed.sh" "$B" "$OUT/skew_fresh.txt" 20 0 --isa vnni --quantization int8 --reprofile
TABLE=$(ls -t "$CACHE"/*.json | head -1)
cp "$TABLE" "$OUT/fresh_table.json"
python3 - "$OUT/fresh_table.json" "$OUT/skewed_table.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["steps_per_second"] = [v if i == 0 else v * 0.85 for i, v in enumerate(t["steps_per_second"])]
json.dump(t, open(sys.argv[2], "w"))
PY
n=0
for arm in old new new old; do
  n=$((n + 1))
  if [[ $arm == old ]]; then bin=$A; else bin=$B; fi
  cp "$OUT/skewed_table.json" "$TABLE"
  bash "$D/../session-int8-amx/eval_speed.sh" "$bin" "$OUT/skew_${n}_$arm.txt" 20 0 --isa vnni --quantization int8
done
