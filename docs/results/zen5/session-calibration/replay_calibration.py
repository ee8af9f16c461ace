# Offline replay of greedy verification rounds (fixed K = 8) with other confidence
# corrections. Greedy rounds at a fixed K do not depend on the confidences, so a trace of
# one run tells what any correction would have predicted for the same rounds.
#
# Input: per set, NAME.jsonl (one line per verified round: id = request, head = 1 when the
# confidences came from the head, d = drafts verified, a = accepted, b = the request's
# offset, c = the proposer's confidences) and NAME.lk (one line per repeat lookup, in the
# same order as the lookup rounds: tail match length, sequence length - match end,
# sequence length), written by the temporary patch trace_patch.diff (not in the tree).
#
# Usage: python3 replay_calibration.py TRACE_DIR   (prints the table of the results section)
import json, math, sys

K = 8


def sig(x): return 1 / (1 + math.exp(-x))


def logit(c):
    c = min(max(c, 1e-6), 1 - 1e-6)
    return math.log(c / (1 - c))


class Offset:  # spec/confidence_offset.h
    def __init__(s, prec, cap=float('inf')): s.b, s.p, s.cap = 0.0, prec, cap
    def apply(s, cs): return [sig(logit(c) + s.b) for c in cs]
    def observe(s, cs, a):
        g = h = 0.0
        for j in range(min(len(cs), a + 1)):
            p = sig(logit(cs[j]) + s.b); g += (1 if j < a else 0) - p; h += p * (1 - p)
        s.p = min(s.p + h, s.cap); s.b += g / s.p


def load(d, name):
    rounds = [json.loads(l) for l in open(f'{d}/{name}.jsonl')]
    lookups = iter([tuple(map(int, l.split())) for l in open(f'{d}/{name}.lk')])
    for r in rounds:
        if not r['head']:
            r['len'], r['rest'], _ = next(lookups)
    return rounds


def source(r):  # Draft::confidence_source
    if r['head']: return 'head'
    return ('full' if r['len'] >= 16 else 'short') + ('-wraps' if r['rest'] < K else '')


def replay(sets, engine=True, head_request=0.0, lookup_request=2.5, cap=100.0, shipped=False):
    """Largest |predicted - observed| survival per set. shipped: the previous rule (each
    request's own head offset, prior 2.5; lookups a constant 0.98). Otherwise the engine's
    calibrator (engine=True) plus each request's offsets (prior precision; 0 = none)."""
    G, out = {}, []
    for name, R in sets:
        req, pred, obs, n = {}, [0.0] * K, [0.0] * K, 0
        for r in R:
            key = (name, r['id'])
            if key not in req:
                req[key] = (Offset(2.5 if shipped else head_request or 1), Offset(lookup_request or 1))
            d = r['d']
            if shipped:
                if r['head']:
                    cs = req[key][0].apply(r['c']); req[key][0].observe(r['c'], r['a'])
                else:
                    cs = [0.98] * d
            else:
                prop = r['c'] if r['head'] else [0.98] * d
                g = G.setdefault(source(r), [])
                cal = [g[j].apply([prop[j]])[0] if j < len(g) else prop[j] for j in range(d)]
                own = req[key][0] if r['head'] else req[key][1]
                use = head_request if r['head'] else lookup_request
                cs = own.apply(cal) if use else cal
                if engine:
                    while len(g) < min(d, r['a'] + 1): g.append(Offset(1.0, cap))
                    for j in range(min(d, r['a'] + 1)): g[j].observe([prop[j]], 1 if j < r['a'] else 0)
                if use: own.observe(cal, r['a'])
            if d != K: continue
            s, n = 1.0, n + 1
            for j in range(K):
                s *= cs[j]; pred[j] += s; obs[j] += 1.0 if r['a'] > j else 0.0
        out.append(max(abs(pred[j] - obs[j]) / n for j in range(K)))
    return out


if __name__ == '__main__':
    d = sys.argv[1]
    evals = [(n, load(d, n)) for n in ['gsm8k_test', 'humaneval', 'mbpp', 'mtbench_question']]
    held = [(n, load(d, 'h_' + n)) for n in ['math500_test', 'specbench_question', 'aime24', 'aime25']]
    rows = [('shipped (request head offset, lookups 0.98)', dict(shipped=True)),
            ('engine calibrator, request offsets: lookups (built)', dict()),
            ('engine calibrator, request offsets: head and lookups', dict(head_request=2.5)),
            ('engine calibrator, request offsets: head (prior 10) and lookups', dict(head_request=10.0)),
            ('engine calibrator alone', dict(lookup_request=0.0)),
            ('engine calibrator, uncapped precision', dict(cap=float('inf')))]
    print('| rule | eval sets, each in a fresh engine | the four in one engine | held-out sets, fresh |')
    print('|---|---|---|---|')
    for label, kw in rows:
        fresh = [replay([s], **kw)[0] for s in evals]
        one = replay(evals, **kw)
        h = [replay([s], **kw)[0] for s in held]
        f = lambda v: ' / '.join(f'{x:.3f}' for x in v)
        print(f'| {label} | {f(fresh)} | {f(one)} | {f(h)} |')
