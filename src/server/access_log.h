// The access log: one line per HTTP request, written through the dspark logger
// (core/log.h) when the response is over (for a stream: after its last event), e.g.
//
//   POST /v1/completions 200 id=cmpl-1f2e... prompt_tokens=12 completion_tokens=16
//     cached_tokens=8 tau=2.41 duration_ms=153.2
//
// (one line). Token counts appear on completion routes once the request was tokenized;
// tau (mean acceptance length) when the server speculates. Levels: info, except 429
// (warn: the server is turning work away) and server errors (error, with the message the
// client got as error="..."), so that --log-level warn keeps only refusals and failures.
//
// The record of a request is opened by the HttpServer around serving it, on the HTTP
// worker thread that serves it; route handlers reach it through current_access_record()
// and fill in what only they know (the OpenAI id, the usage).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace dspark {

struct AccessRecord {
  std::chrono::steady_clock::time_point start;
  std::string method;                // empty until the request line was parsed
  std::string path;
  int status = 0;                    // 0 = no response written (the client went away mid-response)
  std::string request_id;            // a completion's OpenAI id ("cmpl-..."), else "req-..."
  int64_t prompt_tokens = -1;        // -1 = not known (not a completion, or refused before tokenizing)
  int64_t completion_tokens = -1;
  int64_t cached_prompt_tokens = -1;
  double tau = -1;                   // < 0 = no speculation
  std::string error;                 // a server error's message (the response may still be 200: a stream)

  void set_usage(int64_t prompt, int64_t completion, int64_t cached) {
    prompt_tokens = prompt;
    completion_tokens = completion;
    cached_prompt_tokens = cached;
  }
};

// "POST /v1/completions 200 id=... prompt_tokens=... duration_ms=..." (no level, no newline).
std::string format_access_line(const AccessRecord& record, double duration_ms);

// The record of the request the calling thread is serving; nullptr outside of one.
AccessRecord* current_access_record();

// Opens a record for one request on this thread (a fresh "req-..." id, the clock started)
// and, when it ends, writes the access line if a request was read at all.
class AccessLogScope {
 public:
  AccessLogScope();
  ~AccessLogScope();
  AccessLogScope(const AccessLogScope&) = delete;
  AccessLogScope& operator=(const AccessLogScope&) = delete;

  AccessRecord& record() { return record_; }

 private:
  AccessRecord record_;
  AccessRecord* outer_;
};

}  // namespace dspark
