// RunLog: the text and metrics log of a training run. Every line goes to stdout (unless
// quiet) and is appended to DIR/train.log; metrics go to DIR/metrics.jsonl, one JSON object
// per line. Both files are flushed per line so that a killed run loses nothing printed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace dspark::train {

class RunLog {
 public:
  RunLog(const std::filesystem::path& dir, bool quiet);

  void line(const std::string& text);
  template <typename... Args>
  void print(fmt::format_string<Args...> format, Args&&... args) {
    line(fmt::format(format, std::forward<Args>(args)...));
  }
  void metrics(const nlohmann::json& record);

 private:
  bool quiet_;
  std::ofstream log_;
  std::ofstream metrics_;
};

// "1:02:03" / "12:03" for a duration in seconds.
std::string format_duration(double seconds);

// Steps, tokens and seconds since the last progress line: the tokens/s and ETA both
// training loops print.
struct ProgressInterval {
  int64_t steps = 0;
  int64_t tokens = 0;
  double seconds = 0;

  void add(int64_t step_tokens, double step_seconds) {
    ++steps;
    tokens += step_tokens;
    seconds += step_seconds;
  }
  double tokens_per_second() const { return seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0; }
  // Seconds left for `remaining_steps` at this interval's mean step time.
  double eta_seconds(int64_t remaining_steps) const {
    return steps > 0 ? static_cast<double>(remaining_steps) * seconds / static_cast<double>(steps) : 0.0;
  }
  void reset() { *this = ProgressInterval{}; }
};

}  // namespace dspark::train
