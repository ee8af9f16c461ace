// Strict, typed reading of JSON configuration files (config.json of a model or a drafter).
// Every error is a dspark::Error that names the file (`source`) and the field, e.g.
// "config.json: field 'rope_scaling.factor' must be a number, got string \"2\"". JSON types
// are strict: an integer field given as "512" or 12.5 is an error. A null value counts as
// absent, as Hugging Face writes null for unset optional fields.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace dspark {

// Short text of a JSON value for error messages: its type, then its text cut to 60 chars.
std::string describe_json(const nlohmann::json& value);

// The shortest decimal form of a float (1e-05, not 9.999999747378752e-06), which still
// reads back to the same float: how configs write float fields.
double float_for_json(float value);

// A parsed config file: its JSON and the file name errors should carry.
struct JsonFile {
  nlohmann::json root;
  std::string source;  // the file's path
};

// Reads `path`, or path/config.json when path is a directory. Throws "cannot read <what>
// <file>: ..." when the file cannot be opened, "<file>: invalid JSON: ..." when it does
// not parse.
JsonFile read_json_config(const std::filesystem::path& path, std::string_view what);

// Typed access to the fields of one JSON object. `prefix` qualifies field names in messages
// ("rope_scaling." for the fields of rope_scaling). The object and source are referenced,
// not copied: both must outlive the reader. A value that is not an object reads as having
// no fields (callers that require an object check it with their own message).
class JsonFields {
 public:
  // The integers a reader accepts; out-of-range values are errors naming the field.
  enum class IntRange { kInt64, kInt32 };

  JsonFields(const nlohmann::json& object, const std::string& source, std::string prefix = "",
             IntRange int_range = IntRange::kInt64)
      : object_(object), source_(source), prefix_(std::move(prefix)), int_range_(int_range) {}

  // The field's value, or nullptr when it is absent or null.
  const nlohmann::json* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }
  // The field's name as messages show it: prefix + key.
  std::string name(std::string_view key) const { return prefix_ + std::string(key); }
  const std::string& source() const { return source_; }

  // The field's value; throws "missing required field '<name>' (<what>)" when absent.
  const nlohmann::json& require(std::string_view key, std::string_view what) const;

  int64_t get_int(std::string_view key) const;
  int64_t get_int(std::string_view key, int64_t fallback) const;
  // `value` (of field `key`) as an integer within this reader's range.
  int64_t as_int(const nlohmann::json& value, std::string_view key) const;

  double get_number(std::string_view key) const;
  double get_number(std::string_view key, double fallback) const;
  double as_number(const nlohmann::json& value, std::string_view key) const;

  bool get_bool(std::string_view key, bool fallback) const;
  std::optional<std::string> get_string(std::string_view key) const;

  // Lists: strings and numbers are optional (absent = empty); integers are required.
  std::vector<std::string> get_strings(std::string_view key) const;
  std::vector<double> get_numbers(std::string_view key) const;
  std::vector<int64_t> get_ints(std::string_view key) const;

  // Throws "field '<name>' must be positive, got <value>" unless value > 0.
  void require_positive(std::string_view key, int64_t value) const;

 private:
  const nlohmann::json& object_;
  const std::string& source_;
  std::string prefix_;
  IntRange int_range_;
};

}  // namespace dspark
