// Error reporting. Every failure the engine reports is a dspark::Error: a kind (who is at
// fault, which the server turns into an HTTP status without reading any text), the source
// location that raised it ("engine/engine.cpp:123"), and a human sentence. what() is
// "location: sentence", as logs and the CLI print it; message() is the sentence alone,
// which is what a client is shown.
//
// Programmer and configuration errors are kInternal (DSPARK_CHECK / DSPARK_FAIL); a request
// the caller got wrong is kInvalidRequest (DSPARK_CHECK_REQUEST); a request refused only
// because the server is full is kCapacity (DSPARK_CHECK_CAPACITY). Request errors are
// caught per request.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace dspark {

enum class ErrorKind {
  kInvalidRequest,  // the caller's mistake: retrying the same request fails again
  kCapacity,        // refused for lack of room now (queue full): retry later
  kNotFound,        // names something that does not exist (a model, a path)
  kInternal,        // a bug, a broken file or configuration, a failed computation
};

std::string_view error_kind_name(ErrorKind kind);  // "invalid_request", "capacity", ...

class Error : public std::runtime_error {
 public:
  // what() = "location: message", or message alone when location is empty.
  Error(ErrorKind kind, std::string location, std::string message);
  // No location: what() and message() are both `message` (errors whose text names its own
  // position, such as a template's "name:line: ...").
  explicit Error(const std::string& message, ErrorKind kind = ErrorKind::kInternal);

  ErrorKind kind() const { return kind_; }
  const std::string& message() const { return message_; }    // the sentence alone
  const std::string& location() const { return location_; }  // "dir/file.cpp:123", or empty

 private:
  ErrorKind kind_;
  std::string location_;
  std::string message_;
};

// "engine/engine.cpp:123": __FILE__ relative to src/ (or train/), so that messages stay short
// and stable across checkouts.
std::string source_location(const char* file, int line);

[[noreturn]] void throw_error(ErrorKind kind, const char* file, int line, std::string message);
[[noreturn]] inline void throw_error(const char* file, int line, std::string message) {
  throw_error(ErrorKind::kInternal, file, line, std::move(message));
}

}  // namespace dspark

// DSPARK_CHECK_KIND(kind, cond, "format {}", args...): throws dspark::Error of that kind
// when cond is false. The message is formatted only then.
#define DSPARK_CHECK_KIND(kind, cond, ...)                                           \
  do {                                                                               \
    if (!(cond)) [[unlikely]]                                                        \
      ::dspark::throw_error((kind), __FILE__, __LINE__, ::fmt::format(__VA_ARGS__)); \
  } while (0)

// DSPARK_CHECK(cond, "format {}", args...): an internal error (bug, configuration).
#define DSPARK_CHECK(cond, ...) DSPARK_CHECK_KIND(::dspark::ErrorKind::kInternal, cond, __VA_ARGS__)
// DSPARK_CHECK_REQUEST: the request is invalid (HTTP 400).
#define DSPARK_CHECK_REQUEST(cond, ...) DSPARK_CHECK_KIND(::dspark::ErrorKind::kInvalidRequest, cond, __VA_ARGS__)
// DSPARK_CHECK_CAPACITY: no room for the request now (HTTP 429).
#define DSPARK_CHECK_CAPACITY(cond, ...) DSPARK_CHECK_KIND(::dspark::ErrorKind::kCapacity, cond, __VA_ARGS__)

// DSPARK_FAIL("format {}", args...): always throws an internal dspark::Error.
#define DSPARK_FAIL(...) \
  ::dspark::throw_error(::dspark::ErrorKind::kInternal, __FILE__, __LINE__, ::fmt::format(__VA_ARGS__))
