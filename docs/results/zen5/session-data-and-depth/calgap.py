# Largest |predicted - observed| survival per domain from a dspark eval output.
import sys, re
for path in sys.argv[1:]:
    lines = open(path).read().splitlines(); out = []
    try: i = next(k for k, l in enumerate(lines) if l.startswith('confidence calibration'))
    except StopIteration: continue
    for l in lines[i+1:]:
        if not l.strip(): break
        parts = l.split(); name = parts[0]
        gaps = [abs(float(a) - float(b)) for a, b in (p.split('/') for p in parts[1:])]
        out.append(f"{name} {max(gaps):.2f}")
    print(path.split('/')[-1], ' '.join(out))
