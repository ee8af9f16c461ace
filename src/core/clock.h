// Monotonic wall-clock seconds, for latency metrics and progress lines.
#pragma once

#include <chrono>

namespace dspark {

inline double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace dspark
