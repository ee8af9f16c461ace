// RunLog: the text and metrics log of a training run. Every line goes to stdout (unless
// quiet) and is appended to DIR/train.log; metrics go to DIR/metrics.jsonl, one JSON object
// per line. Both files are flushed per line so that a killed run loses nothing printed.
#pragma once

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

}  // namespace dspark::train
