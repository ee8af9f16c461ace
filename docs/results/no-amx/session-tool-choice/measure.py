# Costs of this session's request features on a running `dspark serve` (README.md says how
# it was started): forced tool calls against a plain chat reply (decode tokens/s and tau,
# with and without speculation), and prompt scoring (echo + logprobs, prompt_logprobs)
# against a plain request with the same prompt length. Interleaved rounds; prints one line
# per request and medians. Usage, from the repository root: python3 docs/results/no-amx/session-tool-choice/measure.py PORT ROUNDS
import json, statistics, sys, time, urllib.request

port, rounds = int(sys.argv[1]), int(sys.argv[2])

def post(path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(req) as r:
        reply = json.loads(r.read())
    return reply, time.perf_counter() - start

tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string", "maxLength": 24},
                                     "unit": {"enum": ["celsius", "fahrenheit"]},
                                     "days": {"type": "integer"}},
    "required": ["city", "unit", "days"], "additionalProperties": False}}},
         {"type": "function", "function": {"name": "search", "parameters": {
    "type": "object", "properties": {"query": {"type": "string", "maxLength": 40}}, "required": ["query"]}}}]
kinds = {
    "plain": {},
    "named": {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
    "required": {"tool_choice": "required", "parallel_tool_calls": False},
}
results = {}
for r in range(rounds):
    for spec in (None, 0):
        for kind, extra in kinds.items():
            body = {"messages": [{"role": "user", "content": f"Question {r}: what will the weather be in Paris for the next three days?"}],
                    "tools": tools, "temperature": 0, "max_tokens": 96, **extra}
            if spec is not None:
                body["num_speculative_tokens"] = spec
            # The decode rate leaves the prompt out: the same request cut to one token (the
            # server runs without prefix caching, so both compute the prompt) is subtracted.
            _, first = post("/v1/chat/completions", {**body, "max_tokens": 1})
            reply, whole = post("/v1/chat/completions", body)
            u, finish, seconds = reply["usage"], reply["choices"][0]["finish_reason"], whole - first
            tau = u.get("spec_decode", {}).get("mean_acceptance_length", 0)
            key = (kind, "spec" if spec is None else "plain")
            rate = (u["completion_tokens"] - 1) / seconds
            results.setdefault(key, []).append((rate, tau, u["completion_tokens"]))
            print(f"round {r} {key[0]:8s} {key[1]:5s} tokens {u['completion_tokens']:3d} "
                  f"{rate:7.1f} decode tok/s tau {tau:.2f} finish {finish}", flush=True)
for key, rows in sorted(results.items()):
    print(f"median {key[0]:8s} {key[1]:5s}: {statistics.median(x[0] for x in rows):7.1f} decode tok/s, "
          f"tau {statistics.median(x[1] for x in rows):.2f}, tokens {statistics.median(x[2] for x in rows)}")
for kind in kinds:
    pairs = [a[0] / b[0] for a, b in zip(results[(kind, "spec")], results[(kind, "plain")])]
    print(f"speedup {kind:8s}: median {statistics.median(pairs):.2f}x of {len(pairs)} pairs ({min(pairs):.2f}x-{max(pairs):.2f}x)")

# Scoring: HumanEval prompts (a new one each request; the server runs without prefix
# caching, so every prompt is computed whole), one token out.
with open("../shared/data/eval/humaneval.jsonl") as f:
    texts = [json.loads(line)["prompt"] for line in f]
scoring = {"plain": {}, "echo+logprobs": {"echo": True, "logprobs": 1}, "prompt_logprobs": {"prompt_logprobs": 5}}
times = {}
for r in range(rounds):
    for kind, extra in scoring.items():
        text = texts[(r * 3 + list(scoring).index(kind)) % len(texts)]
        body = {"prompt": text, "max_tokens": 1, "temperature": 0, **extra}
        reply, seconds = post("/v1/completions", body)
        n = reply["usage"]["prompt_tokens"]
        times.setdefault(kind, []).append(n / seconds)
        print(f"round {r} {kind:16s} prompt {n:4d} tokens {seconds * 1e3:7.1f} ms {n / seconds:8.1f} prompt tok/s", flush=True)
for kind, rows in times.items():
    print(f"median {kind:16s}: {statistics.median(rows):8.1f} prompt tok/s")
