# Largest |predicted - observed| survival over the draft positions, per eval set, from
# `dspark eval --json` files: the domains gsm8k, humaneval and mbpp each on their own, every
# other domain of a file (MT-Bench's or Spec-Bench's categories, MATH, AIME) pooled into one
# set, weighting each domain by its rounds. Also τ per set. Usage: python3 pooled.py FILE...
import json, sys

SINGLE = ('gsm8k', 'humaneval', 'mbpp')
for path in sys.argv[1:]:
    d = json.load(open(path))
    sets = {}
    for x in d['domains']:
        key = x['domain'] if x['domain'] in SINGLE else 'rest'
        s = sets.setdefault(key, {'P': None, 'O': None, 'N': None, 'acc': 0, 'rounds': 0})
        c = x['calibration']
        k = len(c['rounds'])
        if s['P'] is None: s['P'], s['O'], s['N'] = [0.0] * k, [0.0] * k, [0] * k
        for j in range(k):
            n = c['rounds'][j]
            s['N'][j] += n; s['P'][j] += n * c['predicted_survival'][j]; s['O'][j] += n * c['observed_survival'][j]
        s['acc'] += x['num_accepted_tokens']; s['rounds'] += x['num_drafts']
    for key, s in sets.items():
        gaps = [(p - o) / n for p, o, n in zip(s['P'], s['O'], s['N'])]
        print(f"{path.split('/')[-1]:28s} {key:9s} tau={1 + s['acc'] / s['rounds']:.3f} max gap={max(map(abs, gaps)):.3f} ",
              ' '.join(f'{g:+.3f}' for g in gaps))
