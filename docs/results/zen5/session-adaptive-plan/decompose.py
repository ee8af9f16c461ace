"""Where a speculative eval run's time went against the plain runs beside it, per domain, as
shares of the plain runs' total time: target forwards (speculative minus plain), the
drafter's propose() and its context upkeep, and the rest of the engine's steps.

python3 decompose.py EVAL.json...   (dspark eval --json output)
"""
import json
import sys

for path in sys.argv[1:]:
    print("==", path)
    for r in json.load(open(path))["domains"]:
        plain = r["plain_total_s"]
        fwd, prop, ctx = r["target_forward_s"], r["drafter_propose_s"], r["drafter_context_s"]
        pfwd = r["plain_target_forward_s"]
        other_spec = r["spec_total_s"] - fwd - prop - ctx
        print(f'{r["domain"]:10s} speedup {r["speedup"]:.3f} | forwards {(fwd - pfwd) / plain * 100:+.1f}% '
              f'propose {prop / plain * 100:.1f}% context {ctx / plain * 100:.1f}% '
              f'rest {other_spec / plain * 100:.1f}% (plain {(plain - pfwd) / plain * 100:.1f}%) | '
              f'steps {r["spec_steps"]} against {r["plain_steps"]}')
