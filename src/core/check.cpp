#include "core/check.h"

#include <utility>

namespace dspark {
namespace {

std::string join_what(const std::string& location, const std::string& message) {
  return location.empty() ? message : fmt::format("{}: {}", location, message);
}

}  // namespace

std::string_view error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidRequest: return "invalid_request";
    case ErrorKind::kCapacity: return "capacity";
    case ErrorKind::kNotFound: return "not_found";
    case ErrorKind::kInternal: return "internal";
  }
  return "internal";
}

Error::Error(ErrorKind kind, std::string location, std::string message)
    : std::runtime_error(join_what(location, message)),
      kind_(kind),
      location_(std::move(location)),
      message_(std::move(message)) {}

Error::Error(const std::string& message, ErrorKind kind)
    : std::runtime_error(message), kind_(kind), message_(message) {}

std::string source_location(const char* file, int line) {
  std::string_view path(file);
  if (auto pos = path.rfind("/src/"); pos != std::string_view::npos) path.remove_prefix(pos + 5);
  else if (auto pos2 = path.rfind("/train/"); pos2 != std::string_view::npos) path.remove_prefix(pos2 + 1);
  return fmt::format("{}:{}", path, line);
}

void throw_error(ErrorKind kind, const char* file, int line, std::string message) {
  throw Error(kind, source_location(file, line), std::move(message));
}

}  // namespace dspark
