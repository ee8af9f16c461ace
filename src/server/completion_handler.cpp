#include "server/completion_handler.h"

#include <algorithm>
#include <ctime>

#include <fmt/format.h>

#include "core/check.h"
#include "core/clock.h"
#include "chat/chat_template.h"
#include "engine/request_validation.h"
#include "server/access_log.h"
#include "server/connection_stream.h"
#include "server/openai_logprobs.h"
#include "server/tool_call_stream.h"

namespace dspark {
namespace {

constexpr std::chrono::milliseconds kPollInterval(50);

ApiError server_error(const std::string& message) { return ApiError(500, message, "server_error"); }

// The usage of a finished response, for the access line.
void record_usage(const Usage& usage, bool speculating) {
  AccessRecord* r = current_access_record();
  if (!r) return;
  r->set_usage(usage.prompt_tokens, usage.completion_tokens, usage.cached_prompt_tokens);
  if (speculating && usage.spec) r->tau = usage.spec->mean_acceptance_length();
}

}  // namespace

// One choice of a streamed response.
struct SseChoice {
  std::shared_ptr<RequestStream> stream;
  std::optional<LogprobsBuilder> logprobs;  // when the request asked for them
  std::optional<ToolCallStream> tool_calls; // chat with tools: the reply's calls as deltas
  bool first = true;                        // no chunk written yet
  bool echo_sent = false;                   // echo: the prompt's chunk was written
  std::optional<std::string> joint;         // echo: what goes before the completion's text, once known
  bool done = false;                        // its finishing chunk was written
  StreamUpdate update;
  int64_t prompt_tokens = 0, cached_prompt_tokens = 0, output_tokens = 0;
  SpecDecodeMetrics spec;
};

// State of one SSE response, shared by its content provider and its releaser.
struct SseState {
  std::vector<SseChoice> choices;  // [n]
  ResponseContext ctx;
  bool include_usage = false;
  bool completed = false;  // [DONE] written
  double last_write = 0;
  size_t next_wait = 0;    // the choice to block on when none has news (round robin)
  std::string out;
};

void ResponseTracker::begin() {
  std::lock_guard lock(mu_);
  ++open_;
}

void ResponseTracker::end() {
  {
    std::lock_guard lock(mu_);
    --open_;
  }
  idle_.notify_all();
}

bool ResponseTracker::wait_idle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return idle_.wait_for(lock, timeout, [&] { return open_ == 0; });
}

void set_error(httplib::Response& response, const ApiError& error) {
  if (AccessRecord* r = current_access_record(); r && error.status() >= 500) r->error = error.message();
  response.status = error.status();
  response.set_content(dump_json(error.body()), "application/json");
}

CompletionHandler::CompletionHandler(EngineLoop& loop, ChatFormat chat_format, std::string model_name,
                                     double heartbeat_seconds, ResponseTracker& tracker)
    : loop_(loop),
      chat_format_(chat_format),
      model_name_(std::move(model_name)),
      heartbeat_seconds_(heartbeat_seconds),
      tracker_(tracker),
      rng_(std::random_device{}()) {}

uint64_t CompletionHandler::random_seed() {
  std::lock_guard lock(rng_mu_);
  return rng_();
}

std::string CompletionHandler::make_id(Endpoint endpoint) {
  const uint64_t r = random_seed();
  return fmt::format("{}-{:016x}", endpoint == Endpoint::kChat ? "chatcmpl" : "cmpl", r);
}

std::function<std::string()> CompletionHandler::call_id_maker() {
  return [this] { return fmt::format("call_{:016x}", random_seed()); };
}

std::vector<int32_t> CompletionHandler::prompt_tokens(const ParsedRequest& r) const {
  const Tokenizer& tokenizer = loop_.tokenizer();
  const char* field = r.endpoint == Endpoint::kChat ? "messages" : "prompt";
  std::vector<int32_t> ids;
  try {
    if (r.endpoint == Endpoint::kChat) {
      ids = tokenizer.encode(chat_format_.render(r.chat), chat_format_.add_special_tokens());
    } else if (r.prompt_is_ids) {
      ids = r.prompt_ids;
    } else {
      ids = tokenizer.encode(r.prompt_text, /*add_special_tokens=*/true);
    }
  } catch (const Error& e) {
    // Whatever the template or the tokenizer refuses here came from the client's text.
    throw ApiError::bad_request(e.message(), field);
  }
  // Checked here as well as in submit() so that the error names the field.
  try {
    validate_prompt(ids, loop_.model().config().vocab_size, loop_.model().max_model_len());
  } catch (const Error& e) {
    throw ApiError::from_error(e, field);
  }
  return ids;
}

void CompletionHandler::handle(const httplib::Request& request, httplib::Response& response, Endpoint endpoint) {
  // The response id is the request's id in the access log, refused requests included.
  const std::string id = make_id(endpoint);
  if (AccessRecord* r = current_access_record()) r->request_id = id;
  try {
    if (tracker_.shutting_down()) {
      throw ApiError(503, "the server is shutting down", "server_error", {}, "shutting_down");
    }
    ParsedRequest r = parse_request(request.body, endpoint);
    if (!r.model.empty() && r.model != model_name_) {
      throw ApiError::model_not_found(r.model, model_name_);
    }
    std::vector<int32_t> prompt = prompt_tokens(r);
    if (!r.max_tokens_given) {
      r.options.max_tokens = endpoint == Endpoint::kCompletions
                                 ? 16
                                 : loop_.model().max_model_len() - static_cast<int64_t>(prompt.size());
    }
    if (!r.seed_given) r.options.sampling.seed = random_seed();

    if (r.n > loop_.max_running()) {
      throw ApiError::bad_request(fmt::format("'n' is {}, but this server decodes at most {} sequences at once", r.n,
                                              loop_.max_running()),
                                  "n");
    }
    // Choice i samples with seed + i: independent streams, reproducible as a whole.
    std::vector<std::shared_ptr<RequestStream>> streams;
    try {
      for (int64_t i = 0; i < r.n; ++i) {
        GenerationOptions options = r.options;
        options.sampling.seed += static_cast<uint64_t>(i);
        streams.push_back(loop_.submit(prompt, options));
      }
    } catch (const Error& e) {  // queue full (429), shutting down (503), invalid (400)
      for (const auto& s : streams) loop_.cancel(s);
      throw ApiError::from_error(e);
    }
    ResponseContext ctx{endpoint, id, static_cast<int64_t>(std::time(nullptr)), model_name_,
                        r.options.logprobs >= 0};
    if (r.tool_choice == ToolChoice::kRequired) {
      ctx.tool_call_format = ToolCallFormat::kMistral;  // the list the reply was constrained to
    } else if (r.tool_choice == ToolChoice::kFunction) {
      ctx.tool_call_format = ToolCallFormat::kForcedFunction;
      ctx.forced_function = r.forced_function;
    } else if (endpoint == Endpoint::kChat && !r.chat.tools.is_null() && chat_format_.chat_template()) {
      ctx.tool_call_format = tool_call_format(chat_format_.chat_template()->source());
    }
    if (r.echo) {
      ctx.echo_text = r.prompt_is_ids ? loop_.tokenizer().decode(prompt, /*skip_special_tokens=*/true) : r.prompt_text;
    }
    ctx.reports_prompt_logprobs = r.reports_prompt_logprobs;
    if (r.echo || r.reports_prompt_logprobs) ctx.prompt_tokens = prompt;
    if (r.stream) respond_stream(response, std::move(streams), ctx, r.include_usage);
    else respond_whole(response, streams, ctx);
  } catch (const ApiError& e) {
    set_error(response, e);
  } catch (const Error& e) {
    set_error(response, ApiError::from_error(e));
  } catch (const std::exception& e) {
    set_error(response, server_error(e.what()));
  }
}

void CompletionHandler::respond_whole(httplib::Response& response,
                                      const std::vector<std::shared_ptr<RequestStream>>& streams,
                                      const ResponseContext& ctx) {
  tracker_.begin();
  nlohmann::json choices = nlohmann::json::array();
  nlohmann::json chat_prompt_logprobs = nullptr;
  Usage usage;
  SpecDecodeMetrics spec;
  try {
    for (size_t i = 0; i < streams.size(); ++i) {
      std::string text;
      StreamUpdate update;
      std::optional<LogprobsBuilder> logprobs;
      if (ctx.logprobs) logprobs.emplace(ctx.endpoint, loop_.tokenizer());
      bool first_update = true;
      std::optional<std::string> joint;  // echo: between the prompt's text and the completion's
      nlohmann::json prompt_logprobs = nullptr;
      while (true) {
        const bool got = streams[i]->next(update, kPollInterval);
        // Nobody would read the answer: free the requests' batch slots and KV blocks now.
        // (Checked on every update too, since a busy request may never wait a whole interval.)
        if (current_client_gone()) throw ApiError(499, "the client closed the connection", "invalid_request_error");
        if (!got) continue;
        if (first_update) {  // the prompt's logprobs come with it
          first_update = false;
          if (ctx.echo_text && logprobs) logprobs->add_prompt(ctx.prompt_tokens, update.prompt_logprobs);
          if (ctx.reports_prompt_logprobs) {
            prompt_logprobs = vllm_prompt_logprobs(loop_.tokenizer(), ctx.prompt_tokens, update.prompt_logprobs);
          }
        }
        if (ctx.echo_text && !joint && !update.token_ids.empty()) {
          joint = echo_joint(loop_.tokenizer(), ctx.prompt_tokens.back(), update.token_ids.front());
        }
        text += update.text;
        if (logprobs) logprobs->add(update.logprobs);
        if (update.finished) break;
      }
      if (ctx.echo_text) text = *ctx.echo_text + (text.empty() ? std::string() : joint.value_or("")) + text;
      if (update.finish_reason == FinishReason::kError) throw server_error(update.error);
      if (update.finish_reason == FinishReason::kCancelled) {
        throw ApiError(503, "the request was cancelled (the server is shutting down)", "server_error", {}, "cancelled");
      }
      usage.prompt_tokens = update.prompt_tokens;  // the prompt counts once, as the first choice saw it
      if (i == 0) usage.cached_prompt_tokens = update.cached_prompt_tokens;
      usage.completion_tokens += update.output_tokens;
      spec.merge(update.spec_metrics);
      const std::optional<ParsedToolCalls> calls =
          parse_tool_calls(ctx.tool_call_format, text, call_id_maker(), ctx.forced_function);
      choices.push_back(make_choice(ctx, static_cast<int64_t>(i), text, update.finish_reason,
                                    logprobs ? logprobs->take() : nullptr, calls ? &*calls : nullptr));
      // vLLM's places: each completions choice; once for a chat response (the prompt is one).
      if (ctx.reports_prompt_logprobs && ctx.endpoint == Endpoint::kCompletions) {
        choices.back()["prompt_logprobs"] = std::move(prompt_logprobs);
      } else if (ctx.reports_prompt_logprobs && i == 0) {
        chat_prompt_logprobs = std::move(prompt_logprobs);
      }
    }
  } catch (...) {
    for (const auto& stream : streams) loop_.cancel(stream);
    tracker_.end();
    throw;
  }
  tracker_.end();
  usage.spec = loop_.has_speculator() ? &spec : nullptr;
  record_usage(usage, loop_.has_speculator());
  nlohmann::json body = make_response(ctx, std::move(choices), usage);
  if (ctx.reports_prompt_logprobs && ctx.endpoint == Endpoint::kChat) {
    body["prompt_logprobs"] = std::move(chat_prompt_logprobs);
  }
  response.set_content(dump_json(body), "application/json");
}

void CompletionHandler::respond_stream(httplib::Response& response,
                                       std::vector<std::shared_ptr<RequestStream>> streams,
                                       const ResponseContext& ctx, bool include_usage) {
  auto state = std::make_shared<SseState>();
  for (auto& stream : streams) {
    SseChoice& c = state->choices.emplace_back();
    c.stream = std::move(stream);
    if (ctx.logprobs) c.logprobs.emplace(ctx.endpoint, loop_.tokenizer());
    if (ctx.tool_call_format != ToolCallFormat::kNone) {
      c.tool_calls.emplace(ctx.tool_call_format, call_id_maker(), ctx.forced_function);
    }
  }
  state->ctx = ctx;
  state->include_usage = include_usage;
  state->last_write = now_seconds();
  response.set_header("Cache-Control", "no-cache");
  tracker_.begin();
  // cpp-httplib calls the provider in a loop until done() (or a false return, which
  // drops the connection); each call blocks until there is something to write.
  auto provider = [this, state](size_t, httplib::DataSink& sink) -> bool {
    try {
      return write_next_event(*state, sink);
    } catch (const std::exception&) {
      return false;  // drops the connection; the releaser cancels the requests
    }
  };
  // Runs when the response is over, whatever happened: a stream that did not reach
  // [DONE] lost its client, so its requests are cancelled (freeing their KV blocks).
  auto release = [this, state](bool) {
    if (!state->completed) {
      for (const SseChoice& c : state->choices) loop_.cancel(c.stream);
    }
    tracker_.end();
  };
  response.set_chunked_content_provider("text/event-stream", provider, release);
}

bool CompletionHandler::end_choice(SseState& s, SseChoice& c) {
  const StreamUpdate& u = c.update;
  c.done = true;
  c.prompt_tokens = u.prompt_tokens;
  c.cached_prompt_tokens = u.cached_prompt_tokens;
  c.output_tokens = u.output_tokens;
  c.spec = u.spec_metrics;
  if (u.finish_reason != FinishReason::kError) return false;
  s.out += sse_event(server_error(u.error).body());
  if (AccessRecord* r = current_access_record()) r->error = u.error;  // the status went out as 200
  return true;
}

bool CompletionHandler::append_choice_events(SseState& s, size_t index) {
  SseChoice& c = s.choices[index];
  if (c.tool_calls) return append_tool_call_events(s, index);
  const StreamUpdate& u = c.update;
  const auto i = static_cast<int64_t>(index);
  auto take_logprobs = [&c]() -> nlohmann::json { return c.logprobs ? c.logprobs->take() : nullptr; };
  if (s.ctx.echo_text) echo_prompt(s, c, i);
  // Logprobs ride on the chunk that carries their text (or on the last one).
  if (c.logprobs) c.logprobs->add(u.logprobs);
  if (!u.finished) {
    if (u.text.empty()) return false;  // tokens whose text is still held back
    s.out += sse_event(make_chunk(s.ctx, u.text, std::nullopt, c.first, take_logprobs(), i));
    c.first = false;
    return false;
  }
  if (u.finish_reason == FinishReason::kError && !u.text.empty()) {
    s.out += sse_event(make_chunk(s.ctx, u.text, std::nullopt, c.first, nullptr, i));
  }
  if (end_choice(s, c)) return true;
  // As OpenAI: the last text in a chunk of its own, then an empty delta carrying the
  // finish reason (clients that read the text only from non-final chunks lose none).
  if (!u.text.empty()) {
    s.out += sse_event(make_chunk(s.ctx, u.text, std::nullopt, c.first, take_logprobs(), i));
    c.first = false;
  }
  // Tokens that produced no text of their own (a held-back tail cut by a stop string).
  const bool pending = c.logprobs && !c.logprobs->empty();
  s.out += sse_event(make_chunk(s.ctx, {}, u.finish_reason, c.first, pending ? take_logprobs() : nullptr, i));
  return false;
}

void CompletionHandler::echo_prompt(SseState& s, SseChoice& c, int64_t index) {
  StreamUpdate& u = c.update;
  if (!c.echo_sent) {  // the prompt first, in a chunk of its own, with its logprobs
    c.echo_sent = true;
    nlohmann::json logprobs = nullptr;
    if (c.logprobs) {
      c.logprobs->add_prompt(s.ctx.prompt_tokens, u.prompt_logprobs);
      logprobs = c.logprobs->take();
    }
    s.out += sse_event(make_chunk(s.ctx, *s.ctx.echo_text, std::nullopt, c.first, logprobs, index));
    c.first = false;
  }
  if (!c.joint && !u.token_ids.empty()) {
    c.joint = echo_joint(loop_.tokenizer(), s.ctx.prompt_tokens.back(), u.token_ids.front());
  }
  if (c.joint && !c.joint->empty() && !u.text.empty()) {  // once, before the completion's first text
    u.text.insert(0, *c.joint);
    c.joint->clear();
  }
}

bool CompletionHandler::append_tool_call_events(SseState& s, size_t index) {
  SseChoice& c = s.choices[index];
  const StreamUpdate& u = c.update;
  const auto i = static_cast<int64_t>(index);
  if (c.logprobs) c.logprobs->add(u.logprobs);
  // Text held back as a possible call sends nothing; its logprobs wait for the next chunk.
  auto write = [&](const std::vector<nlohmann::json>& deltas) {
    for (const nlohmann::json& delta : deltas) {
      const nlohmann::json logprobs = c.logprobs && !c.logprobs->empty() ? c.logprobs->take() : nullptr;
      s.out += sse_event(make_chat_chunk(s.ctx, delta, nullptr, c.first, logprobs, i));
      c.first = false;
    }
  };
  write(c.tool_calls->feed(u.text));
  if (!u.finished) return false;
  write(c.tool_calls->finish());
  if (end_choice(s, c)) return true;
  // As OpenAI: an empty delta carrying the finish reason, "tool_calls" once a call was sent
  // (a forced function's call keeps its reply's reason).
  const nlohmann::json finish = c.tool_calls->has_calls() && calls_finish_as_tool_calls(s.ctx.tool_call_format)
                                    ? "tool_calls"
                                    : std::string(finish_reason_name(u.finish_reason));
  const nlohmann::json logprobs = c.logprobs && !c.logprobs->empty() ? c.logprobs->take() : nullptr;
  s.out += sse_event(make_chat_chunk(s.ctx, nlohmann::json::object(), finish, c.first, logprobs, i));
  return false;
}

bool CompletionHandler::write_next_event(SseState& s, httplib::DataSink& sink) {
  const size_t n = s.choices.size();
  // One choice: block on it a whole interval. Several: look at each without waiting, then
  // block briefly on one of them in turn, so that no choice's text waits on another's.
  const std::chrono::milliseconds wait = n == 1 ? kPollInterval : std::chrono::milliseconds(5);
  while (true) {
    s.out.clear();
    bool failed = false;
    for (size_t i = 0; i < n && !failed; ++i) {
      SseChoice& c = s.choices[i];
      if (c.done || !c.stream->next(c.update, std::chrono::milliseconds(0))) continue;
      failed = append_choice_events(s, i);
    }
    if (s.out.empty() && !failed) {
      for (size_t k = 0; k < n; ++k) {
        const size_t i = (s.next_wait + k) % n;
        if (s.choices[i].done) continue;
        s.next_wait = i + 1;
        if (s.choices[i].stream->next(s.choices[i].update, wait)) failed = append_choice_events(s, i);
        break;
      }
    }
    const bool all_done = std::all_of(s.choices.begin(), s.choices.end(), [](const SseChoice& c) { return c.done; });
    if (failed || all_done) {
      if (!failed) {
        Usage usage;
        SpecDecodeMetrics spec;
        usage.cached_prompt_tokens = s.choices.front().cached_prompt_tokens;
        for (const SseChoice& c : s.choices) {
          usage.prompt_tokens = c.prompt_tokens;
          usage.completion_tokens += c.output_tokens;
          spec.merge(c.spec);
        }
        usage.spec = loop_.has_speculator() ? &spec : nullptr;
        record_usage(usage, loop_.has_speculator());
        if (s.include_usage) s.out += sse_event(make_usage_chunk(s.ctx, usage));
      }
      s.out += kSseDone;
      if (!sink.write(s.out.data(), s.out.size())) return false;
      s.completed = !failed;  // a failed choice leaves the others to be cancelled
      sink.done();
      return true;
    }
    if (!s.out.empty()) {
      s.last_write = now_seconds();
      return sink.write(s.out.data(), s.out.size());
    }
    if (!sink.is_writable()) return false;
    if (now_seconds() - s.last_write >= heartbeat_seconds_) {
      static constexpr std::string_view kHeartbeat = ": keep-alive\n\n";
      s.last_write = now_seconds();
      return sink.write(kHeartbeat.data(), kHeartbeat.size());
    }
  }
}

}  // namespace dspark
