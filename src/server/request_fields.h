// Reading a request body's fields with errors that name them (internal to the server's
// request parsing: openai_request.cpp, structured_outputs.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "server/openai_protocol.h"

namespace dspark::request_fields {

using nlohmann::json;

// The JSON type of a value, in the words error messages use (json and ordered_json alike).
inline const char* type_name(nlohmann::detail::value_t type) {
  switch (type) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "integer";
    case json::value_t::number_float: return "number";
    case json::value_t::string: return "string";
    case json::value_t::array: return "array";
    case json::value_t::object: return "object";
    default: return "value";
  }
}

template <typename Json>
ApiError wrong_type(const std::string& field, const char* expected, const Json& got) {
  return ApiError::bad_request(fmt::format("'{}' must be {}, got {}", field, expected, type_name(got.type())), field,
                               "invalid_type");
}

// A field whose value asks for something the server does not do.
inline ApiError unsupported(const std::string& field, const std::string& what) {
  return ApiError::bad_request(fmt::format("'{}': {} is not supported", field, what), field, "unsupported_parameter");
}

// Reads the optional fields of one JSON object; null counts as absent.
class Fields {
 public:
  Fields(const json& object, std::string prefix = {}) : object_(object), prefix_(std::move(prefix)) {}

  const json* get(const char* key) const {
    auto it = object_.find(key);
    if (it == object_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  std::string name(const char* key) const { return prefix_ + key; }

  std::optional<bool> boolean(const char* key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) throw wrong_type(name(key), "a boolean", *v);
    return v->get<bool>();
  }
  std::optional<double> number(const char* key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_number()) throw wrong_type(name(key), "a number", *v);
    const double d = v->get<double>();
    if (!std::isfinite(d)) throw ApiError::bad_request(fmt::format("'{}' must be finite", name(key)), name(key));
    return d;
  }
  // Integers; a float with an integral value (16.0) is accepted as its integer.
  std::optional<int64_t> integer(const char* key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (v->is_number_unsigned()) {
      const uint64_t u = v->get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        throw ApiError::bad_request(fmt::format("'{}' is too large", name(key)), name(key));
      }
      return static_cast<int64_t>(u);
    }
    if (v->is_number_integer()) return v->get<int64_t>();
    if (v->is_number_float()) {
      const double d = v->get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18) return static_cast<int64_t>(d);
    }
    throw wrong_type(name(key), "an integer", *v);
  }
  std::optional<std::string> string(const char* key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) throw wrong_type(name(key), "a string", *v);
    return v->get<std::string>();
  }

 private:
  const json& object_;
  std::string prefix_;
};

}  // namespace dspark::request_fields
