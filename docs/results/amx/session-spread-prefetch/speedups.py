#!/usr/bin/env python3
"""Mean speedup over the five domains (and tau) of each eval_speed.sh output file.
   speedups.py FILE...   prints: file  speedups per domain  mean  kernels line"""
import re, sys
for path in sys.argv[1:]:
    sp, kern = [], ''
    for line in open(path):
        if line.startswith('kernels:'):
            kern = line.strip()
        m = re.match(r'(\w+)\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)x\s+(yes|no|-)', line)
        if m:
            sp.append(float(m.group(2)))
    mean = sum(sp) / len(sp) if sp else float('nan')
    print(f"{path.split('/')[-1]:50s} {' '.join(f'{s:.2f}' for s in sp)}  mean {mean:.2f}  {kern}")
