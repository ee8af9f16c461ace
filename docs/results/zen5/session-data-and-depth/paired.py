import json, sys
def load(p):
    d = {}
    for l in open(p):
        m = json.loads(l)
        if m.get("type") == "train": d[m["step"]] = m
    return d
a, b = load(sys.argv[1]), load(sys.argv[2])
steps = sorted(set(a) & set(b))
w = int(sys.argv[3]) if len(sys.argv) > 3 else 100
for lo in range(0, steps[-1], w):
    s = [k for k in steps if lo < k <= lo + w]
    if not s: continue
    for key in ("loss", "tv", "alpha1"):
        pass
    la = sum(a[k]["loss"] for k in s) / len(s); lb = sum(b[k]["loss"] for k in s) / len(s)
    ta = sum(a[k]["tv"] for k in s) / len(s); tb = sum(b[k]["tv"] for k in s) / len(s)
    aa = sum(a[k]["alpha1"] for k in s) / len(s); ab = sum(b[k]["alpha1"] for k in s) / len(s)
    print(f"steps {lo+1:5d}-{lo+w:5d}: loss {la:.4f} {lb:.4f} ({lb-la:+.4f})  tv {ta:.4f} {tb:.4f} ({tb-ta:+.4f})  alpha1 {aa:.4f} {ab:.4f} ({ab-aa:+.4f})")
