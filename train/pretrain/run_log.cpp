#include "train/pretrain/run_log.h"

#include <cmath>
#include <cstdio>
#include <ctime>

#include "core/check.h"

namespace dspark::train {

RunLog::RunLog(const std::filesystem::path& dir, bool quiet) : quiet_(quiet) {
  std::filesystem::create_directories(dir);
  log_.open(dir / "train.log", std::ios::app);
  metrics_.open(dir / "metrics.jsonl", std::ios::app);
  DSPARK_CHECK(log_.good() && metrics_.good(), "cannot open the logs in {}", dir.string());
}

void RunLog::line(const std::string& text) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  if (!quiet_) {
    std::fputs((text + "\n").c_str(), stdout);
    std::fflush(stdout);
  }
  log_ << stamp << " " << text << "\n";
  log_.flush();
}

void RunLog::metrics(const nlohmann::json& record) {
  metrics_ << record.dump() << "\n";
  metrics_.flush();
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

}  // namespace dspark::train
