# Paired training loss of two `dspark-train draft` runs over the same batches (same seed,
# so step s sees the same sequences and anchors in both), averaged over step ranges.
# usage: python3 paired_loss.py RUN_A/metrics.jsonl RUN_B/metrics.jsonl
import json, sys

def load(path):
    return {d["step"]: d for d in map(json.loads, open(path)) if d.get("type") == "train"}

a, b = load(sys.argv[1]), load(sys.argv[2])
for lo, hi in [(1, 200), (201, 500), (501, 800), (801, 1000)]:
    steps = [s for s in b if lo <= s <= hi and s in a]
    if not steps:
        continue
    mean = lambda run, key: sum(run[s][key] for s in steps) / len(steps)
    print(f"steps {lo}-{hi} ({len(steps)} logged): loss A {mean(a, 'loss'):.4f} B {mean(b, 'loss'):.4f} "
          f"(B - A {mean(b, 'loss') - mean(a, 'loss'):+.4f}) | tv {mean(a, 'tv'):.4f} {mean(b, 'tv'):.4f} "
          f"| alpha1 {mean(a, 'alpha1'):.4f} {mean(b, 'alpha1'):.4f}")
