# Regex-constrained answers on a running `dspark serve` (README.md says how it was started):
# GSM8K questions from the eval set, answered greedily in the format of the training answers
# (reasoning lines, then "#### <number>"), unconstrained and under two regexes for that
# format (loops, and counted runs), each with and without speculation (the request's
# num_speculative_tokens: 0 turns it off). The decode rate leaves the prompt out: the same
# request cut to one token is timed first and subtracted (the server runs without prefix
# caching, so both compute the prompt). Interleaved; one line per request, then medians and
# per-pair speedups. Usage, from the repository root:
#   python3 docs/results/no-amx/session-regex/measure.py PORT ROUNDS
import json, re, statistics, sys, time, urllib.request

port, rounds = int(sys.argv[1]), int(sys.argv[2])

def post(body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(req) as r:
        reply = json.loads(r.read())
    return reply, time.perf_counter() - start

with open("../shared/data/eval/gsm8k_test.jsonl") as f:
    questions = [json.loads(line)["question"] for line in f]
kinds = {
    "plain": None,
    "regex_loops": r" [^\n]+(\n[^\n]+){0,7}\n#### -?[0-9,]+",
    "regex_counted": r" [^\n]{1,150}(\n[^\n]{1,150}){0,7}\n#### -?[0-9]{1,8}",
}
results = {}
for r in range(rounds):
    prompt = f"Question: {questions[r % len(questions)]}\nAnswer:"
    for spec in (None, 0):
        for kind, pattern in kinds.items():
            body = {"prompt": prompt, "temperature": 0, "max_tokens": 160}
            if pattern is not None:
                body["structured_outputs"] = {"regex": pattern}
            if spec is not None:
                body["num_speculative_tokens"] = spec
            _, first = post({**body, "max_tokens": 1})
            reply, whole = post(body)
            u, choice, seconds = reply["usage"], reply["choices"][0], whole - first
            text, finish = choice["text"], choice["finish_reason"]
            if pattern is not None and finish == "stop":
                assert re.fullmatch(pattern, text), text
            tau = u.get("spec_decode", {}).get("mean_acceptance_length", 0)
            key = (kind, "spec" if spec is None else "plain")
            rate = (u["completion_tokens"] - 1) / seconds
            results.setdefault(key, []).append((rate, tau, u["completion_tokens"], text))
            print(f"round {r:2d} {kind:13s} {key[1]:5s} tokens {u['completion_tokens']:3d} {rate:7.1f} decode tok/s "
                  f"tau {tau:.2f} finish {finish}", flush=True)
for key, rows in sorted(results.items()):
    print(f"median {key[0]:13s} {key[1]:5s}: {statistics.median(x[0] for x in rows):7.1f} decode tok/s, "
          f"tau {statistics.median(x[1] for x in rows):.2f}, tokens {statistics.median(x[2] for x in rows)}")
for kind in kinds:
    pairs = [a[0] / b[0] for a, b in zip(results[(kind, "spec")], results[(kind, "plain")])]
    print(f"speedup {kind:13s}: median {statistics.median(pairs):.2f}x of {len(pairs)} pairs "
          f"({min(pairs):.2f}x-{max(pairs):.2f}x)")
for kind in kinds:
    if kind == "plain":
        continue
    for mode in ("plain", "spec"):
        ratio = [a[0] / b[0] for a, b in zip(results[(kind, mode)], results[("plain", mode)])]
        same = sum(a[3] == b[3] for a, b in zip(results[(kind, mode)], results[("plain", mode)]))
        print(f"{kind} / unconstrained, {mode:5s}: decode rate median {statistics.median(ratio):.2f}x; "
              f"same text in {same} of {len(ratio)}")
