// The process's one logger ("dspark", to stderr through spdlog). Messages meant for an
// operator: one access line per HTTP request, errors, and anything else worth keeping in
// a server's log. Nothing logs per token or per engine step at info.
//
// The level is global (set_log_level, `dspark serve --log-level`); info by default. Tests
// attach a sink of their own (add_log_sink) to read what was logged.
#pragma once

#include <memory>
#include <string_view>

#include <spdlog/spdlog.h>

namespace dspark {

spdlog::logger& logger();

// "trace" | "debug" | "info" | "warn" | "error" | "off"; anything else is an Error.
spdlog::level::level_enum parse_log_level(std::string_view name);
void set_log_level(spdlog::level::level_enum level);

// Adds a sink to the logger (besides stderr) / removes it again. Not to be called while
// other threads log.
void add_log_sink(std::shared_ptr<spdlog::sinks::sink> sink);
void remove_log_sink(const std::shared_ptr<spdlog::sinks::sink>& sink);

}  // namespace dspark
