# Largest |predicted - observed| survival over the 8 positions, pooled over a file's
# domains (MT-Bench has four), from `dspark eval --json` output, and tau.
# usage: python3 max_gap.py FILE.json ...
import json, sys

for path in sys.argv[1:]:
    d = json.load(open(path))
    P, O, N = [0.0] * 8, [0.0] * 8, [0] * 8
    accepted = rounds = 0
    for e in d["domains"]:
        c = e["calibration"]
        accepted += e["num_accepted_tokens"]
        rounds += e["num_drafts"]
        for j in range(8):
            n = c["rounds"][j]
            P[j] += c["predicted_survival"][j] * n
            O[j] += c["observed_survival"][j] * n
            N[j] += n
    gaps = [(P[j] - O[j]) / N[j] for j in range(8)]
    print(f"{path}: max |gap| {max(abs(g) for g in gaps):.3f}  tau {1 + accepted / rounds:.2f}  gaps",
          " ".join(f"{g:+.3f}" for g in gaps))
