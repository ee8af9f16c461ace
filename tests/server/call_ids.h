// Tool-call ids for tests: "call_0", "call_1", ... from one counter per maker, so the ids a
// parse hands out are predictable.
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace dspark::testing {

inline std::function<std::string()> counting_call_ids() {
  auto n = std::make_shared<int>(0);
  return [n] { return "call_" + std::to_string((*n)++); };
}

}  // namespace dspark::testing
