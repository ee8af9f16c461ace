// Drives a running `dspark serve` with the official OpenAI JavaScript client, as users'
// applications do, and checks that every response has the shape the client's types
// promise. Usage: node openai_client_check.mjs BASE_URL DIR (the folder holding node_modules)
// Prints one line per check and a count last; exits 1 on any failure.
import { createRequire } from "node:module";
import path from "node:path";

const [baseURL, modulesRoot] = process.argv.slice(2);
const require = createRequire(path.join(modulesRoot, "package.json"));
const { OpenAI } = require("openai");
const client = new OpenAI({ apiKey: "test-key", baseURL, maxRetries: 0, timeout: 60_000 });

let passed = 0;
let failed = 0;
function check(name, condition, detail = "") {
  if (condition) {
    passed++;
    console.log(`ok   ${name}`);
  } else {
    failed++;
    console.log(`FAIL ${name} ${detail}`);
  }
}
const isNumber = (x) => typeof x === "number" && Number.isFinite(x);
const messages = [{ role: "user", content: "Tell me a story about a cat." }];

async function run(name, body) {
  try {
    await body();
  } catch (e) {
    check(name, false, `threw ${e?.status ?? ""} ${e?.message ?? e}`);
  }
}

await run("models", async () => {
  const list = await client.models.list();
  check("models.list", list.data.length === 1 && typeof list.data[0].id === "string");
  const model = await client.models.retrieve(list.data[0].id);
  check("models.retrieve", model.id === list.data[0].id && model.object === "model");
});
const model = (await client.models.list()).data[0].id;

await run("completions", async () => {
  const r = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: 12, temperature: 0 });
  check("completions.create text", typeof r.choices[0].text === "string" && r.choices[0].text.length > 0);
  check("completions.create usage", r.usage.completion_tokens === 12 && isNumber(r.usage.prompt_tokens));
  check("completions.create finish_reason", r.choices[0].finish_reason === "length");
});

await run("chat", async () => {
  const r = await client.chat.completions.create({ model, messages, max_tokens: 10, temperature: 0 });
  const m = r.choices[0].message;
  check("chat.create message", m.role === "assistant" && typeof m.content === "string");
  check("chat.create object", r.object === "chat.completion" && typeof r.id === "string");
});

await run("chat stream", async () => {
  const whole = await client.chat.completions.create({ model, messages, max_tokens: 16, temperature: 0 });
  const stream = await client.chat.completions.create({
    model, messages, max_tokens: 16, temperature: 0, stream: true, stream_options: { include_usage: true },
  });
  let text = "";
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.delta?.content ?? "";
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  check("stream text equals whole", text === whole.choices[0].message.content, JSON.stringify([text, whole.choices[0].message.content]));
  check("stream finish_reason", finish === "length");
  check("stream usage", usage && usage.completion_tokens === 16);
});

await run("logprobs", async () => {
  const r = await client.chat.completions.create({
    model, messages, max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 2,
  });
  const content = r.choices[0].logprobs?.content ?? [];
  check("chat logprobs count", content.length === 8, `${content.length}`);
  check("chat logprobs entries", content.every((t) => typeof t.token === "string" && isNumber(t.logprob) &&
      Array.isArray(t.bytes) && t.top_logprobs.length === 2 && t.top_logprobs.every((a) => isNumber(a.logprob))));
  const joined = Buffer.from(content.flatMap((t) => t.bytes)).toString("utf8");
  check("chat logprobs bytes spell the reply", joined === r.choices[0].message.content);
  const c = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: 6, temperature: 0, logprobs: 2 });
  const lp = c.choices[0].logprobs;
  check("completion logprobs", lp.tokens.length === 6 && lp.token_logprobs.every(isNumber) &&
      lp.top_logprobs.length === 6 && lp.text_offset.length === 6);
  const stream = await client.chat.completions.create({
    model, messages, max_tokens: 8, temperature: 0, logprobs: true, stream: true,
  });
  let streamed = [];
  for await (const chunk of stream) for (const ch of chunk.choices) streamed = streamed.concat(ch.logprobs?.content ?? []);
  check("streamed logprobs equal whole", JSON.stringify(streamed.map((t) => [t.token, t.logprob])) ===
      JSON.stringify(content.map((t) => [t.token, t.logprob])));
});

await run("penalties", async () => {
  const plain = await client.chat.completions.create({ model, messages, max_tokens: 24, temperature: 0 });
  const penalised = await client.chat.completions.create({
    model, messages, max_tokens: 24, temperature: 0, presence_penalty: 1.5, frequency_penalty: 1.0,
  });
  check("penalties change the reply", plain.choices[0].message.content !== penalised.choices[0].message.content);
});

await run("n = 2", async () => {
  const r = await client.chat.completions.create({ model, messages, max_tokens: 8, temperature: 1, seed: 7, n: 2 });
  check("n = 2 choices", r.choices.length === 2 && r.choices[0].index === 0 && r.choices[1].index === 1);
  check("n = 2 usage", r.usage.completion_tokens === 16, JSON.stringify(r.usage));
});

await run("json mode", async () => {
  // JSON mode is constrained decoding: the reply is a prefix of one JSON object (all of it
  // when finish_reason is "stop").
  const j = await client.chat.completions.create({ model, messages, max_tokens: 24, response_format: { type: "json_object" } });
  const content = j.choices[0].message.content;
  check("json mode starts an object", typeof content === "string" && content.trimStart().startsWith("{"), content);
  if (j.choices[0].finish_reason === "stop") {
    let parsed = null;
    try { parsed = JSON.parse(content); } catch (e) { parsed = null; }
    check("json mode closed object parses", parsed !== null && typeof parsed === "object" && !Array.isArray(parsed), content);
  }
  const r = await client.chat.completions.create({ model, messages, max_tokens: 4, response_format: { type: "text" } });
  check("response_format text", typeof r.choices[0].message.content === "string");
});

await run("json schema", async () => {
  // Structured outputs: a schema whose values are short, so even this tiny model finishes;
  // the reply parses and has the schema's shape, whole and streamed alike.
  const response_format = {
    type: "json_schema",
    json_schema: {
      name: "verdict", strict: true,
      schema: {
        type: "object",
        properties: { ok: { type: "boolean" }, mood: { enum: ["happy", "sad"] }, note: { type: ["string", "null"], maxLength: 3 } },
        required: ["ok", "mood", "note"], additionalProperties: false,
      },
    },
  };
  const j = await client.chat.completions.create({ model, messages, max_tokens: 400, temperature: 0, response_format });
  const content = j.choices[0].message.content;
  let parsed = null;
  try { parsed = JSON.parse(content); } catch (e) { parsed = null; }
  check("json schema finishes", j.choices[0].finish_reason === "stop", j.choices[0].finish_reason);
  check("json schema reply has the schema's shape", parsed !== null && typeof parsed.ok === "boolean" &&
      ["happy", "sad"].includes(parsed.mood) && (parsed.note === null || (typeof parsed.note === "string" && [...parsed.note].length <= 3)) &&
      Object.keys(parsed).join(",") === "ok,mood,note", content);
  const stream = await client.chat.completions.create({ model, messages, max_tokens: 400, temperature: 0, response_format, stream: true });
  let text = "";
  for await (const chunk of stream) for (const ch of chunk.choices) text += ch.delta?.content ?? "";
  check("json schema streamed equals whole", text === content, JSON.stringify([text, content]));
  try {
    await client.chat.completions.create({ model, messages, max_tokens: 8,
      response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "string", pattern: "^a" } } } });
    check("unsupported schema is refused", false, "accepted");
  } catch (e) {
    check("unsupported schema is refused", e.status === 400 && e.param === "response_format" && /pattern/.test(e.message),
        `${e.status} ${e.param} ${e.message}`);
  }
});

await run("tools", async () => {
  // Small: the test model's context is 512 tokens of a 512-token vocabulary, and the
  // template adds its own tool instructions.
  const tools = [{ type: "function", function: { name: "sky" } }];
  const history = [
    { role: "system", content: "Hi." },
    { role: "user", content: "Sky?" },
    { role: "assistant", content: null,
      tool_calls: [{ id: "c1", type: "function", function: { name: "sky", arguments: "{}" } }] },
    { role: "tool", tool_call_id: "c1", content: "ok" },
  ];
  const r = await client.chat.completions.create({ model, messages: history, tools, max_tokens: 8, temperature: 0 });
  const m = r.choices[0].message;
  check("tools: reply parses", m.role === "assistant" &&
      (typeof m.content === "string" || Array.isArray(m.tool_calls)) &&
      ["stop", "length", "tool_calls"].includes(r.choices[0].finish_reason));
});

await run("tools streamed", async () => {
  // The same conversation streamed through the client's own accumulator, which assembles
  // delta.tool_calls by index: its final message must be the non-streamed one (content or
  // calls, and the finish reason) at temperature 0.
  const tools = [{ type: "function", function: { name: "sky" } }];
  const history = [
    { role: "system", content: "Hi." },
    { role: "user", content: "Sky?" },
    { role: "assistant", content: null,
      tool_calls: [{ id: "c1", type: "function", function: { name: "sky", arguments: "{}" } }] },
    { role: "tool", tool_call_id: "c1", content: "ok" },
  ];
  const body = { model, messages: history, tools, max_tokens: 8, temperature: 0 };
  const whole = (await client.chat.completions.create(body)).choices[0];
  const streamed = (await client.chat.completions.stream(body).finalChatCompletion()).choices[0];
  const calls = (m) => JSON.stringify((m.tool_calls ?? []).map((c) => [c.type, c.function.name, c.function.arguments]));
  check("tools streamed: same reply as whole",
      (streamed.message.content ?? "") === (whole.message.content ?? "") &&
      calls(streamed.message) === calls(whole.message) && streamed.finish_reason === whole.finish_reason,
      JSON.stringify([streamed, whole]));
});

await run("forced tool call", async () => {
  // tool_choice naming the function: the reply is one call to it (content null), through
  // the client's types and its stream accumulator. (The template's tool instructions fill
  // almost all of this model's 512-token context, so the call's validity against its
  // schema is checked in server_tool_choice_test.cpp, with room to finish.)
  const tools = [{ type: "function", function: { name: "sky" } }];
  const body = { model, messages: [{ role: "user", content: "Sky?" }], tools,
    tool_choice: { type: "function", function: { name: "sky" } }, temperature: 0 };
  const whole = (await client.chat.completions.create(body)).choices[0];
  const call = whole.message.tool_calls?.[0];
  check("forced function: one call to it", whole.message.tool_calls?.length === 1 && whole.message.content === null &&
      call.type === "function" && call.function.name === "sky" && typeof call.function.arguments === "string" &&
      typeof call.id === "string" && ["stop", "length"].includes(whole.finish_reason), JSON.stringify(whole));
  const streamed = (await client.chat.completions.stream(body).finalChatCompletion()).choices[0];
  check("forced function streamed: the same call", streamed.message.tool_calls?.length === 1 &&
      streamed.message.tool_calls[0].function.name === "sky" &&
      streamed.message.tool_calls[0].function.arguments === call?.function.arguments &&
      streamed.finish_reason === whole.finish_reason, JSON.stringify(streamed));
});

await run("errors", async () => {
  try {
    await client.chat.completions.create({ model: "no-such-model", messages, max_tokens: 4 });
    check("unknown model is 404", false, "accepted");
  } catch (e) {
    check("unknown model is 404", e.status === 404 && typeof e.message === "string");
  }
  try {
    await client.chat.completions.create({ model, messages, max_tokens: 4, temperature: -1 });
    check("bad temperature is 400", false, "accepted");
  } catch (e) {
    check("bad temperature is 400", e.status === 400 && e.param === "temperature", `${e.status} ${e.param}`);
  }
});

console.log(`openai client checks: ${passed} ok, ${failed} failing`);
process.exit(failed === 0 ? 0 : 1);
