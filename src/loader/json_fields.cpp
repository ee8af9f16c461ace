#include "loader/json_fields.h"

#include <cstdlib>
#include <fstream>
#include <limits>

#include "core/check.h"

namespace dspark {

using nlohmann::json;

std::string describe_json(const json& value) {
  std::string text = value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return fmt::format("{} {}", value.type_name(), text);
}

double float_for_json(float value) {
  const std::string text = fmt::format("{}", value);
  return std::strtod(text.c_str(), nullptr);
}

JsonFile read_json_config(const std::filesystem::path& path, std::string_view what) {
  const std::filesystem::path file =
      std::filesystem::is_directory(path) ? path / "config.json" : path;
  std::ifstream in(file);
  DSPARK_CHECK(in, "cannot read {} {}: file not found or unreadable", what, file.string());
  JsonFile out;
  out.source = file.string();
  try {
    out.root = json::parse(in);
  } catch (const json::exception& e) {
    DSPARK_FAIL("{}: invalid JSON: {}", out.source, e.what());
  }
  return out;
}

const json* JsonFields::find(std::string_view key) const {
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

const json& JsonFields::require(std::string_view key, std::string_view what) const {
  const json* v = find(key);
  DSPARK_CHECK(v, "{}: missing required field '{}' ({})", source_, name(key), what);
  return *v;
}

int64_t JsonFields::get_int(std::string_view key) const {
  return as_int(require(key, "an integer"), key);
}

int64_t JsonFields::get_int(std::string_view key, int64_t fallback) const {
  const json* v = find(key);
  return v ? as_int(*v, key) : fallback;
}

int64_t JsonFields::as_int(const json& v, std::string_view key) const {
  const bool narrow = int_range_ == IntRange::kInt32;
  const int64_t min = narrow ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
  const int64_t max = narrow ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
  DSPARK_CHECK(v.is_number_integer(), "{}: field '{}' must be an integer, got {}", source_,
               name(key), describe_json(v));
  DSPARK_CHECK(!v.is_number_unsigned() || v.get<uint64_t>() <= static_cast<uint64_t>(max),
               "{}: field '{}' is out of range: {}", source_, name(key), v.dump());
  const int64_t value = v.get<int64_t>();
  DSPARK_CHECK(value >= min && value <= max, "{}: field '{}' is out of range: {}", source_,
               name(key), value);
  return value;
}

double JsonFields::get_number(std::string_view key) const {
  return as_number(require(key, "a number"), key);
}

double JsonFields::get_number(std::string_view key, double fallback) const {
  const json* v = find(key);
  return v ? as_number(*v, key) : fallback;
}

double JsonFields::as_number(const json& v, std::string_view key) const {
  DSPARK_CHECK(v.is_number(), "{}: field '{}' must be a number, got {}", source_, name(key),
               describe_json(v));
  return v.get<double>();
}

bool JsonFields::get_bool(std::string_view key, bool fallback) const {
  const json* v = find(key);
  if (!v) return fallback;
  DSPARK_CHECK(v->is_boolean(), "{}: field '{}' must be true or false, got {}", source_,
               name(key), describe_json(*v));
  return v->get<bool>();
}

std::optional<std::string> JsonFields::get_string(std::string_view key) const {
  const json* v = find(key);
  if (!v) return std::nullopt;
  DSPARK_CHECK(v->is_string(), "{}: field '{}' must be a string, got {}", source_, name(key),
               describe_json(*v));
  return v->get<std::string>();
}

std::vector<std::string> JsonFields::get_strings(std::string_view key) const {
  const json* v = find(key);
  if (!v) return {};
  DSPARK_CHECK(v->is_array(), "{}: field '{}' must be a list of strings, got {}", source_,
               name(key), describe_json(*v));
  std::vector<std::string> out;
  for (const json& item : *v) {
    DSPARK_CHECK(item.is_string(), "{}: field '{}' must be a list of strings, got {}", source_,
                 name(key), describe_json(*v));
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::vector<double> JsonFields::get_numbers(std::string_view key) const {
  const json* v = find(key);
  if (!v) return {};
  DSPARK_CHECK(v->is_array(), "{}: field '{}' must be a list of numbers, got {}", source_,
               name(key), describe_json(*v));
  std::vector<double> out;
  for (const json& item : *v) {
    DSPARK_CHECK(item.is_number(), "{}: field '{}' must be a list of numbers, got {}", source_,
                 name(key), describe_json(*v));
    out.push_back(item.get<double>());
  }
  return out;
}

std::vector<int64_t> JsonFields::get_ints(std::string_view key) const {
  const json& v = require(key, "a list of integers");
  DSPARK_CHECK(v.is_array(), "{}: field '{}' must be a list of integers, got {}", source_,
               name(key), describe_json(v));
  std::vector<int64_t> out;
  for (const json& item : v) out.push_back(as_int(item, key));
  return out;
}

void JsonFields::require_positive(std::string_view key, int64_t value) const {
  DSPARK_CHECK(value > 0, "{}: field '{}' must be positive, got {}", source_, name(key), value);
}

}  // namespace dspark
