// JSON plumbing shared by the tokenizer.json parsers: reading a file with errors that
// name it, the "type" tag of a component, and the {"String": ...} / {"Regex": ...}
// pattern objects of Split, Replace and friends.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer_regex.h"

namespace dspark::tok {

// Parses a JSON file; throws dspark::Error naming the path when it is missing or malformed.
nlohmann::json read_json_file(const std::filesystem::path& path);

// The "type" field of a component object; kind ("normalizer", ...) is for the message.
std::string json_type(const nlohmann::json& j, std::string_view kind, std::string_view source);

// A pattern given as {"String": literal} or {"Regex": pcre}.
struct SplitPatternSpec {
  std::string literal;                 // used when regex is null
  std::shared_ptr<const Regex> regex;  // compiled once at load time

  static SplitPatternSpec parse(const nlohmann::json& pattern, std::string_view source);
  // Appends all non-overlapping matches in text, left to right.
  void find_all(std::string_view text, std::vector<Span>& out) const;
};

}  // namespace dspark::tok
