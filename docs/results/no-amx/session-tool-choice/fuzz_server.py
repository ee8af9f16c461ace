# The server fuzz of session-logit-bias with this session's fields added (tool_choice forms,
# parallel_tool_calls, min_tokens, stop_token_ids, include_stop_str_in_output, prompt_logprobs,
# echo). Usage: python3 fuzz_server.py PORT N SEED
import json, random, socket, sys, threading, time, http.client
PORT = int(sys.argv[1]); N = int(sys.argv[2]); SEED = int(sys.argv[3])
rnd = random.Random(SEED)
def rval(depth=0):
    c = rnd.randrange(12)
    if c == 0: return None
    if c == 1: return rnd.choice([True, False])
    if c == 2: return rnd.choice([0, 1, -1, 2**31, -2**63, 2**64, 10**30, 7])
    if c == 3: return rnd.choice([0.0, -0.5, 1e308, -1e-308, 0.7, 2.5, float('nan') if False else 1.0])
    if c == 4: return rnd.choice(["", "a", "\u0000", "\ud7ff\uffff", "é"*1000, "<|im_start|>", "x"*5000, "\n\n"])
    if c == 5 and depth < 3: return [rval(depth+1) for _ in range(rnd.randrange(4))]
    if c == 6 and depth < 3: return {rnd.choice(KEYS): rval(depth+1) for _ in range(rnd.randrange(4))}
    if c == 7: return "Question: what is 3+4?\nAnswer:"
    if c == 8: return [1, 2, 3, 8191, 8192, -1]
    if c == 9: return rnd.randrange(-5, 300)
    if c == 10: return rnd.random() * 3 - 1
    return "hello"
KEYS = ["model","prompt","messages","max_tokens","max_completion_tokens","temperature","top_p","top_k","min_p","n","stream",
        "stop","seed","logprobs","top_logprobs","echo","presence_penalty","frequency_penalty","repetition_penalty",
        "response_format","tools","tool_choice","stream_options","ignore_eos","logit_bias","user","suffix","best_of",
        "role","content","type","json_schema","schema","name","function","parameters","include_usage",
        "parallel_tool_calls","min_tokens","stop_token_ids","include_stop_str_in_output","prompt_logprobs"]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
          "properties": {"city": {"type": "string", "maxLength": 8}, "days": {"enum": [1, 2, 3]}}, "required": ["city"]}}},
         {"type": "function", "function": {"name": "now"}}]
def good_base(chat):
    b = {"model": "tiny-target", "max_tokens": rnd.choice([1, 4, 16, 40])}
    if chat:
        b["messages"] = [{"role": "user", "content": rnd.choice(["Hi", "What is 2+2?", "Write a python function."])}]
    else:
        b["prompt"] = rnd.choice(["Question: 3+4?\nAnswer:", "def f(x):", "Once upon a time", [5, 6, 7]])
    return b
def make_body():
    chat = rnd.random() < 0.5
    b = good_base(chat)
    for _ in range(rnd.randrange(0, 5)):
        k = rnd.choice(KEYS)
        if rnd.random() < 0.6:
            # plausible values
            pv = {"temperature": rnd.choice([0, 0.5, 1.0, 1.5]), "top_p": rnd.choice([0.1, 0.9, 1]), "top_k": rnd.choice([0, 1, 5, 50]),
                  "min_p": rnd.choice([0, 0.1]), "n": rnd.choice([1, 2, 3]), "stream": rnd.choice([True, False]),
                  "stop": rnd.choice(["\n", ["a", "b"], "Answer", ""]), "seed": rnd.randrange(100), "logprobs": rnd.choice([True, False, 3, 0]),
                  "top_logprobs": rnd.choice([0, 1, 5, 20]), "echo": rnd.choice([True, False]), "presence_penalty": rnd.choice([0, 1.5, -2]),
                  "frequency_penalty": rnd.choice([0, 0.5]), "repetition_penalty": rnd.choice([1, 1.2]),
                  "response_format": rnd.choice([{"type": "json_object"}, {"type": "text"}, {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}]),
                  "stream_options": {"include_usage": rnd.choice([True, False])}, "ignore_eos": rnd.choice([True, False]),
                  "logit_bias": rnd.choice([{"5": 100}, {"8191": -100}, {}]),
                  "max_tokens": rnd.choice([1, 8, 64, 200]),
                  "tools": rnd.choice([TOOLS, TOOLS[:1], [], [{"type": "function"}], [{"function": {"name": "x", "parameters": {"pattern": "a"}}}]]),
                  "tool_choice": rnd.choice(["required", "auto", "none", {"type": "function", "function": {"name": "get_weather"}},
                                             {"type": "function", "function": {"name": "now"}}, {"type": "function", "function": {"name": "fly"}},
                                             {"type": "function"}, "always"]),
                  "parallel_tool_calls": rnd.choice([True, False, "no"]),
                  "min_tokens": rnd.choice([0, 1, 4, 30, 500, -1]),
                  "stop_token_ids": rnd.choice([[0], [13, 5], [], [8192], [-1], "0"]),
                  "include_stop_str_in_output": rnd.choice([True, False]),
                  "prompt_logprobs": rnd.choice([0, 1, 5, 20, 21, -1])}
            b[k] = pv.get(k, rval())
        else:
            b[k] = rval()
    return ("/v1/chat/completions" if chat else "/v1/completions"), b
def raw_send(path, payload, disconnect_after=None):
    s = socket.create_connection(("127.0.0.1", PORT), timeout=60)
    req = (f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n").encode() + payload
    s.sendall(req)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk: break
            data += chunk
            if disconnect_after is not None and len(data) > disconnect_after: break
            if b"\r\n0\r\n\r\n" in data or (b"Content-Length" in data and data.count(b"\r\n\r\n") >= 1 and not b"chunked" in data[:500] and len(data.split(b"\r\n\r\n",1)[1]) >= int(data.split(b"Content-Length: ",1)[1].split(b"\r\n",1)[0])): break
    except socket.timeout:
        return b"TIMEOUT"
    finally:
        s.close()
    return data
statuses = {}
lock = threading.Lock()
def worker(i):
    r = random.Random(SEED * 1000 + i)
    for j in range(N):
        global rnd
        path, body = make_body()
        mode = r.randrange(10)
        if mode == 0: payload = json.dumps(body).encode()[: r.randrange(1, 40)]  # truncated JSON
        elif mode == 1: payload = b"\xff\xfe" + json.dumps(body).encode()
        else: payload = json.dumps(body).encode()
        dis = r.choice([None, None, None, 50, 300])
        try:
            out = raw_send(path, payload, dis)
        except Exception as e:
            out = ("EXC " + type(e).__name__).encode()
        st = out[:12].decode(errors="replace")
        with lock: statuses[st] = statuses.get(st, 0) + 1
threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps(statuses, indent=0))
