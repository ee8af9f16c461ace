#!/usr/bin/env python3
"""Per run of an A/B directory of `dspark eval` outputs (NAME_ROUND.txt): mean tau, the mean
of the per-domain speedups, total speculative tokens/s over the domains, and the drafter's
stage times per round (when printed).   summarize.py DIR"""
import re
import sys
from pathlib import Path

for path in sorted(Path(sys.argv[1]).glob("*.txt")):
    speedups, spec_tps, stages = [], [], None
    tau = None
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(\S+)\s+\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)x", line)
        if m:
            speedups.append(float(m.group(5)))
            spec_tps.append(float(m.group(3)))
        if line.startswith("all ") and tau is None:
            tau = float(line.split()[1])
        if line.startswith("drafter propose() per round"):
            for follow in lines[i + 1:]:
                if follow.startswith("all "):
                    stages = " | ".join(x.strip() for x in follow[4:].split("|"))
                    break
    mean = sum(speedups) / len(speedups)
    print(f"{path.stem:10s} tau {tau:.3f}  mean speedup {mean:.3f}  spec tokens/s summed {sum(spec_tps):8.1f}"
          + (f"  stages (ms) {stages}" if stages else ""))
