#include "core/check.h"

#include <string_view>

namespace dspark {

void throw_error(const char* file, int line, const std::string& message) {
  // Print paths relative to src/ so messages stay short and stable across checkouts.
  std::string_view path(file);
  if (auto pos = path.rfind("/src/"); pos != std::string_view::npos) path.remove_prefix(pos + 5);
  else if (auto pos2 = path.rfind("/train/"); pos2 != std::string_view::npos) path.remove_prefix(pos2 + 1);
  throw Error(fmt::format("{}:{}: {}", path, line, message));
}

}  // namespace dspark
