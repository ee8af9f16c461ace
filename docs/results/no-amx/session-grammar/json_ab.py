# JSON objects on a running `dspark serve` (README.md says how it was started): the same
# prompts under response_format json_object (the engine's own JSON matcher) and under a JSON
# grammar in GBNF (structured_outputs.grammar; whitespace runs of up to 16 bytes, none after
# the object, as json_object allows), greedy, each with and without speculation
# (num_speculative_tokens 0 turns it off), interleaved. The decode rate leaves the prompt out
# (the request cut to one token is timed first and subtracted; no prefix caching). Prints a
# line per request, then medians, grammar / json_object rate ratios and how many texts match.
# Usage, from the repository root: python3 docs/results/no-amx/session-grammar/json_ab.py PORT ROUNDS
import json, statistics, sys, time, urllib.request

port, rounds = int(sys.argv[1]), int(sys.argv[2])
JSON_GBNF = r'''root    ::= ws "{" ws members? "}"
object  ::= "{" ws members? "}" ws
members ::= member ("," ws member)*
member  ::= string ":" ws value
array  ::= "[" ws (value ("," ws value)*)? "]" ws
value  ::= object | array | string | number | ("true" | "false" | "null") ws
string ::= "\"" char* "\"" ws
char   ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)? ws
ws     ::= [ \t\n\r]{0,16}
'''
subjects = ["a person", "a book", "a city", "a recipe", "a car", "a school", "a dog", "a movie", "a shop",
            "a planet", "a song", "a farm"]


def post(body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(req) as r:
        reply = json.loads(r.read())
    return reply, time.perf_counter() - start


results = {}
for r in range(rounds):
    prompt = f"Here is {subjects[r % len(subjects)]} described as a JSON object:\n"
    for spec in (None, 0):
        for kind in ("json_object", "grammar"):
            body = {"prompt": prompt, "temperature": 0, "max_tokens": 120}
            if kind == "json_object":
                body["response_format"] = {"type": "json_object"}
            else:
                body["structured_outputs"] = {"grammar": JSON_GBNF}
            if spec is not None:
                body["num_speculative_tokens"] = spec
            _, first = post({**body, "max_tokens": 1})
            reply, whole = post(body)
            u, choice = reply["usage"], reply["choices"][0]
            if choice["finish_reason"] == "stop":
                assert isinstance(json.loads(choice["text"]), dict), choice["text"]
            tau = u.get("spec_decode", {}).get("mean_acceptance_length", 0)
            key = (kind, "spec" if spec is None else "plain")
            rate = (u["completion_tokens"] - 1) / (whole - first)
            results.setdefault(key, []).append((rate, tau, u["completion_tokens"], choice["text"]))
            print(f"round {r:2d} {kind:11s} {key[1]:5s} tokens {u['completion_tokens']:3d} {rate:7.1f} decode tok/s "
                  f"tau {tau:.2f} finish {choice['finish_reason']}", flush=True)
for key, rows in sorted(results.items()):
    print(f"median {key[0]:11s} {key[1]:5s}: {statistics.median(x[0] for x in rows):7.1f} decode tok/s, "
          f"tau {statistics.median(x[1] for x in rows):.2f}, tokens {statistics.median(x[2] for x in rows)}")
for mode in ("plain", "spec"):
    a, b = results[("grammar", mode)], results[("json_object", mode)]
    ratio = [x[0] / y[0] for x, y in zip(a, b)]
    same = sum(x[3] == y[3] for x, y in zip(a, b))
    print(f"grammar / json_object, {mode:5s}: decode rate median {statistics.median(ratio):.2f}x "
          f"({min(ratio):.2f}x-{max(ratio):.2f}x); same text in {same} of {len(ratio)}")
for kind in ("json_object", "grammar"):
    pairs = [x[0] / y[0] for x, y in zip(results[(kind, "spec")], results[(kind, "plain")])]
    print(f"speedup {kind:11s}: median {statistics.median(pairs):.2f}x ({min(pairs):.2f}x-{max(pairs):.2f}x)")
