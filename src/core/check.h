// Error reporting. Every failure the engine reports is a dspark::Error whose message
// starts with the source file and line that raised it, followed by a human sentence.
// Programmer and configuration errors throw; request errors are caught per request.
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace dspark {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throw_error(const char* file, int line, const std::string& message);

}  // namespace dspark

// DSPARK_CHECK(cond, "format {}", args...): throws dspark::Error when cond is false.
#define DSPARK_CHECK(cond, ...)                                               \
  do {                                                                        \
    if (!(cond)) [[unlikely]]                                                 \
      ::dspark::throw_error(__FILE__, __LINE__, ::fmt::format(__VA_ARGS__));  \
  } while (0)

// DSPARK_FAIL("format {}", args...): always throws dspark::Error.
#define DSPARK_FAIL(...) ::dspark::throw_error(__FILE__, __LINE__, ::fmt::format(__VA_ARGS__))
