#include "server/completion_handler.h"

#include <ctime>

#include <fmt/format.h>

#include "core/check.h"
#include "core/clock.h"

namespace dspark {
namespace {

constexpr std::chrono::milliseconds kPollInterval(50);

// Engine errors start with "file.cpp:123: "; clients get the sentence only.
std::string client_message(const std::exception& e) {
  std::string_view m(e.what());
  const size_t colon = m.find(": ");
  if (colon != std::string_view::npos) {
    const std::string_view head = m.substr(0, colon);
    const size_t line_colon = head.rfind(':');
    if (line_colon != std::string_view::npos && line_colon + 1 < head.size() &&
        head.find_first_not_of("0123456789", line_colon + 1) == std::string_view::npos &&
        (head.find(".cpp") != std::string_view::npos || head.find(".h") != std::string_view::npos)) {
      m.remove_prefix(colon + 2);
    }
  }
  return std::string(m);
}

ApiError server_error(const std::string& message) { return ApiError(500, message, "server_error"); }

}  // namespace

// State of one SSE response, shared by its content provider and its releaser.
struct SseState {
  std::shared_ptr<RequestStream> stream;
  ResponseContext ctx;
  bool include_usage = false;
  bool first = true;
  bool completed = false;  // [DONE] written
  double last_write = 0;
  StreamUpdate update;
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

std::vector<int32_t> CompletionHandler::prompt_tokens(const ParsedRequest& r) const {
  const Tokenizer& tokenizer = loop_.tokenizer();
  const char* field = r.endpoint == Endpoint::kChat ? "messages" : "prompt";
  std::vector<int32_t> ids;
  try {
    if (r.endpoint == Endpoint::kChat) {
      ids = tokenizer.encode(chat_format_.render(r.messages), chat_format_.add_special_tokens());
    } else if (r.prompt_is_ids) {
      ids = r.prompt_ids;
    } else {
      ids = tokenizer.encode(r.prompt_text, /*add_special_tokens=*/true);
    }
  } catch (const Error& e) {
    throw ApiError::bad_request(client_message(e), field);
  }
  if (ids.empty()) throw ApiError::bad_request("the prompt is empty (no tokens to condition on)", field);
  const int64_t vocab = loop_.model().config().vocab_size;
  for (int32_t id : ids) {
    if (id >= vocab) {
      throw ApiError::bad_request(fmt::format("token id {} is outside the vocabulary [0, {})", id, vocab), field);
    }
  }
  const int64_t context = loop_.model().max_model_len();
  if (static_cast<int64_t>(ids.size()) >= context) {
    throw ApiError::bad_request(
        fmt::format("This model's maximum context length is {} tokens, but the prompt has {} tokens (at least one "
                    "must be left to generate)",
                    context, ids.size()),
        field, "context_length_exceeded");
  }
  return ids;
}

void CompletionHandler::handle(const httplib::Request& request, httplib::Response& response, Endpoint endpoint) {
  try {
    if (tracker_.shutting_down()) {
      throw ApiError(503, "the server is shutting down", "server_error", {}, "shutting_down");
    }
    ParsedRequest r = parse_request(request.body, endpoint);
    if (!r.model.empty() && r.model != model_name_) {
      throw ApiError::not_found(fmt::format("The model '{}' does not exist; this server serves '{}'", r.model, model_name_),
                                "model", "model_not_found");
    }
    std::vector<int32_t> prompt = prompt_tokens(r);
    if (!r.max_tokens_given) {
      r.options.max_tokens = endpoint == Endpoint::kCompletions
                                 ? 16
                                 : loop_.model().max_model_len() - static_cast<int64_t>(prompt.size());
    }
    if (!r.seed_given) r.options.sampling.seed = random_seed();

    std::shared_ptr<RequestStream> stream;
    try {
      stream = loop_.submit(std::move(prompt), r.options);
    } catch (const QueueFullError& e) {
      throw ApiError(429, client_message(e), "rate_limit_error", {}, "queue_full");
    } catch (const ShuttingDownError& e) {
      throw ApiError(503, client_message(e), "server_error", {}, "shutting_down");
    } catch (const Error& e) {
      throw ApiError::bad_request(client_message(e));
    }
    const ResponseContext ctx{endpoint, make_id(endpoint), static_cast<int64_t>(std::time(nullptr)), model_name_};
    if (r.stream) respond_stream(response, stream, ctx, r.include_usage);
    else respond_whole(response, stream, ctx);
  } catch (const ApiError& e) {
    set_error(response, e);
  } catch (const std::exception& e) {
    set_error(response, server_error(client_message(e)));
  }
}

void CompletionHandler::respond_whole(httplib::Response& response, const std::shared_ptr<RequestStream>& stream,
                                      const ResponseContext& ctx) {
  tracker_.begin();
  std::string text;
  StreamUpdate update;
  try {
    while (true) {
      if (!stream->next(update, kPollInterval)) continue;
      text += update.text;
      if (update.finished) break;
    }
  } catch (...) {
    loop_.cancel(stream);
    tracker_.end();
    throw;
  }
  tracker_.end();
  if (update.finish_reason == FinishReason::kError) throw server_error(update.error);
  if (update.finish_reason == FinishReason::kCancelled) {
    throw ApiError(503, "the request was cancelled (the server is shutting down)", "server_error", {}, "cancelled");
  }
  response.set_content(dump_json(make_response(ctx, text, update.finish_reason,
                                               Usage{update.prompt_tokens, update.output_tokens})),
                       "application/json");
}

void CompletionHandler::respond_stream(httplib::Response& response, const std::shared_ptr<RequestStream>& stream,
                                       const ResponseContext& ctx, bool include_usage) {
  auto state = std::make_shared<SseState>();
  state->stream = stream;
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
      return false;  // drops the connection; the releaser cancels the request
    }
  };
  // Runs when the response is over, whatever happened: a stream that did not reach
  // [DONE] lost its client, so its request is cancelled (freeing its KV blocks).
  auto release = [this, state](bool) {
    if (!state->completed) loop_.cancel(state->stream);
    tracker_.end();
  };
  response.set_chunked_content_provider("text/event-stream", provider, release);
}

bool CompletionHandler::write_next_event(SseState& s, httplib::DataSink& sink) {
  while (true) {
    if (s.stream->next(s.update, kPollInterval)) {
      const StreamUpdate& u = s.update;
      s.out.clear();
      if (!u.finished) {
        if (u.text.empty()) continue;  // tokens whose text is still held back
        s.out = sse_event(make_chunk(s.ctx, u.text, std::nullopt, s.first));
        s.first = false;
        s.last_write = now_seconds();
        return sink.write(s.out.data(), s.out.size());
      }
      if (u.finish_reason == FinishReason::kError) {
        if (!u.text.empty()) s.out += sse_event(make_chunk(s.ctx, u.text, std::nullopt, s.first));
        s.out += sse_event(server_error(u.error).body());
      } else {
        s.out += sse_event(make_chunk(s.ctx, u.text, u.finish_reason, s.first));
      }
      if (s.include_usage) s.out += sse_event(make_usage_chunk(s.ctx, Usage{u.prompt_tokens, u.output_tokens}));
      s.out += kSseDone;
      if (!sink.write(s.out.data(), s.out.size())) return false;
      s.completed = true;
      sink.done();
      return true;
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
