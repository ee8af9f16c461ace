# Offline replay of greedy verification rounds: how many drafts each round would have
# accepted had it proposed the context's repeat continuation (spec/tail_match.h: the tokens
# after the most recent earlier occurrence of the last 2..16 tokens, read as a loop) instead
# of the DSpark drafts, when that match is at least M tokens long. Greedy output is
# deterministic, so a request's final text tells what any proposal would have accepted at a
# round's start. Input: a temporary per-round trace (one JSON line per verification round:
# id, p = prompt length, ctx = the request's tokens after the round, d = drafts verified,
# a = accepted), written by a build with a few extra lines in Engine::record_round; not in
# the tree. Usage: python3 lookup_replay.py TRACE.jsonl ...
import json, sys


def repeat_continuation(t, k, min_n, max_n):
    """Same lookup as find_tail_match + repeated_token: (continuation, match length)."""
    n = len(t)
    longest = min(max_n, n - 1)
    if longest < min_n:
        return [], 0
    best_len, best_end = min_n - 1, -1
    for end in range(n - 1, 0, -1):
        if t[end - 1] != t[-1]:
            continue
        limit = min(longest, end)
        length = 1
        while length < limit and t[end - 1 - length] == t[n - 1 - length]:
            length += 1
        if length > best_len:
            best_len, best_end = length, end
            if length == longest:
                break
    if best_end < 0:
        return [], 0
    period = n - best_end
    return [t[best_end + i if best_end + i < n else best_end + (best_end + i - n) % period] for i in range(k)], best_len

def lcp(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]: n += 1
    return n
for p in sys.argv[1:]:
    rounds = [json.loads(l) for l in open(p)]
    final = {}
    for r in rounds: final[r["id"]] = r["ctx"]  # last wins: the longest
    tot = {"dspark": 0, "ngram": 0, "oracle": 0}
    hyb = {}
    n = 0
    for r in rounds:
        d, a = r["d"], r["a"]
        if len(d) != 8: continue
        ctx = r["ctx"]; start = len(ctx) - a - 1
        if ctx[start:start + a] != d[:a]:
            start = len(ctx) - a
            if ctx[start:start + a] != d[:a]: continue
        F = final[r["id"]][start:start + 8]
        if len(F) < 8: continue  # near the end: skip
        t = ctx[:start]
        cont, m = repeat_continuation(t, 8, 2, 16)
        ng = lcp(cont, F) if cont else 0
        n += 1
        tot["dspark"] += a; tot["ngram"] += ng; tot["oracle"] += max(a, ng)
        for M in (2, 4, 8, 12, 16):
            use = cont and m >= M
            hyb.setdefault(M, 0); hyb[M] += ng if use else a
        # splice: dspark drafts while they agree with cont, then cont's tokens
        if cont:
            agree = lcp(d, cont)
            spl = cont  # = d[:agree] + cont[agree:]
            hyb.setdefault("splice", 0); hyb["splice"] += lcp(spl, F) if agree > 0 else a
        else:
            hyb.setdefault("splice", 0); hyb["splice"] += a
    print(p, n, " ".join(f"{k} {1 + v / n:.2f}" for k, v in tot.items()), "| hybrid min match:", " ".join(f"{k}:{1 + v / n:.2f}" for k, v in hyb.items()))
