"""Mean speedup of the five domains and tau, per configuration and build, from final.sh's outputs.

python3 summarize.py DIR
"""
import glob
import os
import re
import sys

out = sys.argv[1]
rows = {}
for path in sorted(glob.glob(os.path.join(out, "*_*_[12].txt"))):
    label, build, rnd = re.match(r"(.+)_(new|old)_([12])\.txt$", os.path.basename(path)).groups()
    speedups, tau = [], None
    for line in open(path, encoding="utf-8", errors="replace"):
        f = line.split()
        if len(f) >= 6 and f[0] in ("gsm8k", "humaneval", "mbpp", "writing", "roleplay") and f[5].endswith("x"):
            speedups.append(float(f[5][:-1]))
        if len(f) == 2 and f[0] == "all" and tau is None:
            tau = float(f[1])
    rows.setdefault(label, []).append((build, rnd, sum(speedups) / len(speedups), tau, speedups))
for label, runs in rows.items():
    for build, rnd, mean, tau, s in runs:
        print(f"{label:22s} {build} r{rnd}: mean speedup {mean:.3f}  tau {tau:.3f}  ({' '.join(f'{x:.2f}' for x in s)})")
