"""Medians per configuration of decode_ab.sh's output, and new / old per round.

    python3 summarize.py decode_ab.txt
"""
import collections
import statistics
import sys

runs = collections.defaultdict(list)  # (tokens, quantization, isa, build) -> [tokens/s by round]
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 12 or not f[11]:
        continue
    runs[(int(f[3]), f[5], f[7], f[9])].append(float(f[11]))

print(f"{'tokens':>6} {'weights':>7} {'isa':>8} {'old median':>10} {'new median':>10} {'new/old':>7}  new/old per round")
for key in sorted({k[:3] for k in runs}):
    old, new = runs[key + ("old",)], runs[key + ("new",)]
    per_round = " ".join(f"{n / o:.2f}" for o, n in zip(old, new))
    mo, mn = statistics.median(old), statistics.median(new)
    print(f"{key[0]:>6} {key[1]:>7} {key[2]:>8} {mo:>10.0f} {mn:>10.0f} {mn / mo:>7.2f}  {per_round}")
