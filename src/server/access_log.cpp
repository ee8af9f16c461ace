#include "server/access_log.h"

#include <random>

#include <fmt/format.h>

#include "core/log.h"

namespace dspark {
namespace {

thread_local AccessRecord* g_current = nullptr;

std::string new_request_id() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return fmt::format("req-{:016x}", rng());
}

spdlog::level::level_enum level_of(const AccessRecord& r) {
  if (r.status >= 500 || !r.error.empty()) return spdlog::level::err;
  if (r.status == 429) return spdlog::level::warn;
  return spdlog::level::info;
}

}  // namespace

std::string format_access_line(const AccessRecord& r, double duration_ms) {
  std::string line = fmt::format("{} {} {} id={}", r.method, r.path, r.status, r.request_id);
  if (r.prompt_tokens >= 0) {
    line += fmt::format(" prompt_tokens={} completion_tokens={} cached_tokens={}", r.prompt_tokens,
                        r.completion_tokens, r.cached_prompt_tokens);
  }
  if (r.tau >= 0) line += fmt::format(" tau={:.2f}", r.tau);
  line += fmt::format(" duration_ms={:.1f}", duration_ms);
  // Quoted with fmt's debug format: a message cannot break the line or forge another.
  if (!r.error.empty()) line += fmt::format(" error={:?}", r.error);
  return line;
}

AccessRecord* current_access_record() { return g_current; }

AccessLogScope::AccessLogScope() : outer_(g_current) {
  record_.start = std::chrono::steady_clock::now();
  record_.request_id = new_request_id();
  g_current = &record_;
}

AccessLogScope::~AccessLogScope() {
  g_current = outer_;
  if (record_.method.empty()) return;  // nothing was read (a connection closed before a request)
  // A response that was begun but never finished (its client left mid-stream): 499, as
  // nginx logs a client that closed the connection.
  if (record_.status == 0) record_.status = 499;
  const std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - record_.start;
  try {
    logger().log(level_of(record_), "{}", format_access_line(record_, elapsed.count()));
  } catch (...) {
    // Logging must never take a request (or a destructor) down.
  }
}

}  // namespace dspark
