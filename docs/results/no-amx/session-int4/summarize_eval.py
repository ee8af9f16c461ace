# Means over the five domains of each `dspark eval` output: tau, speculative and plain tokens/s, speedup.
# python3 summarize_eval.py eval/*.txt
import sys, re, glob
def parse(f):
    rows = {}
    for line in open(f):
        m = re.match(r'^(gsm8k|humaneval|mbpp|writing|roleplay)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)x', line)
        if m and m.group(1) not in rows:
            rows[m.group(1)] = tuple(float(m.group(i)) for i in range(3, 7))
    return rows
for f in sys.argv[1:]:
    r = parse(f)
    n = len(r)
    tau, spec, plain, sp = (sum(v[i] for v in r.values()) / n for i in range(4))
    print(f"{f.split('/')[-1]:45s} domains {n} tau {tau:.3f} spec {spec:7.1f} plain {plain:7.1f} speedup {sp:.2f}x")
