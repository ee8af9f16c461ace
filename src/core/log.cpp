#include "core/log.h"

#include <algorithm>
#include <string>

#include <spdlog/sinks/stdout_sinks.h>

#include "core/check.h"

namespace dspark {

spdlog::logger& logger() {
  // Created on first use, never registered globally: spdlog's registry is shared with
  // anything else in the process that uses spdlog, this logger is ours alone. Not colored:
  // logs are read from files and journals at least as often as from terminals.
  static const std::shared_ptr<spdlog::logger> instance = [] {
    auto l = std::make_shared<spdlog::logger>("dspark", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    l->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");
    l->set_level(spdlog::level::info);
    l->flush_on(spdlog::level::trace);  // stderr: every line as it happens
    return l;
  }();
  return *instance;
}

spdlog::level::level_enum parse_log_level(std::string_view name) {
  static constexpr std::pair<std::string_view, spdlog::level::level_enum> kLevels[] = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug}, {"info", spdlog::level::info},
      {"warn", spdlog::level::warn},   {"error", spdlog::level::err},   {"off", spdlog::level::off},
  };
  for (const auto& [n, level] : kLevels) {
    if (n == name) return level;
  }
  DSPARK_FAIL("unknown log level '{}' (expected trace, debug, info, warn, error or off)", name);
}

void set_log_level(spdlog::level::level_enum level) { logger().set_level(level); }

void add_log_sink(std::shared_ptr<spdlog::sinks::sink> sink) {
  logger().sinks().push_back(std::move(sink));
}

void remove_log_sink(const std::shared_ptr<spdlog::sinks::sink>& sink) {
  auto& sinks = logger().sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), sink), sinks.end());
}

}  // namespace dspark
