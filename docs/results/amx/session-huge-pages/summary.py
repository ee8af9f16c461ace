"""Medians per arm of demo_ab.sh's files (plain and speculative decode tokens/s, speedup), for
`dspark eval` outputs (eval_speed.sh) the means over the five domains of the same three, and for
profile_ab.sh's output the medians of the 1- and 9-token step times per configuration and binary.
   python3 summary.py FILE..."""
import re
import statistics
import sys


def demo(path):
    arms, arm = {}, None
    for line in open(path):
        if line.startswith('== '):
            arm = line.split()[1]
            arms.setdefault(arm, {'plain': [], 'speculative': [], 'speedup': []})
        elif m := re.search(r'\] (plain|speculative)\s*:.*decode ([0-9.]+) tokens/s', line):
            arms[arm][m.group(1)].append(float(m.group(2)))
        elif m := re.search(r'speedup over plain: ([0-9.]+)x', line):
            arms[arm]['speedup'].append(float(m.group(1)))
    for name, v in arms.items():
        print(f"{path} {name:7s} plain {statistics.median(v['plain']):7.1f} speculative "
              f"{statistics.median(v['speculative']):7.1f} speedup {statistics.median(v['speedup']):.2f}x "
              f"({min(v['speedup']):.2f}-{max(v['speedup']):.2f}, n={len(v['speedup'])})")


def evaluation(path):
    rows = []  # domain rows of the first table: name prompts tau spec plain speedup ...
    for line in open(path):
        f = line.split()
        if len(f) >= 6 and f[0] in ('gsm8k', 'humaneval', 'mbpp', 'writing', 'roleplay') and f[5].endswith('x'):
            rows.append((float(f[3]), float(f[4]), float(f[5][:-1])))
    spec, plain, speedup = (statistics.mean(c) for c in zip(*rows))
    print(f"{path} plain {plain:7.1f} speculative {spec:7.1f} speedup {speedup:.2f}x (means of {len(rows)} domains)")


def profile(path):
    runs = {}  # (configuration, binary) -> [(ms 1, ms 9, ratio)]
    for line in open(path):
        config, binary, t1, t9, ratio = line.split()
        runs.setdefault((config, binary), []).append((float(t1), float(t9), float(ratio)))
    for (config, binary), v in runs.items():
        t1, t9, ratio = (statistics.median(c) for c in zip(*v))
        print(f"{path} {config:10s} {binary}: 1 token {t1:.3f} ms, 9 tokens {t9:.3f} ms, ratio {ratio:.3f} (n={len(v)})")


for path in sys.argv[1:]:
    text = open(path).read()
    if 'spec t/s' in text:
        evaluation(path)
    elif '== ' in text:
        demo(path)
    else:
        profile(path)
