#include "tokenizer/tokenizer_json.h"

#include <fstream>
#include <sstream>

#include "core/check.h"

namespace dspark::tok {

nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  DSPARK_CHECK(in.good(), "cannot open {}", path.string());
  std::stringstream buffer;
  buffer << in.rdbuf();
  try {
    return nlohmann::json::parse(buffer.str());
  } catch (const nlohmann::json::parse_error& e) {
    DSPARK_FAIL("{}: malformed JSON at byte {}: {}", path.string(), e.byte, e.what());
  }
}

std::string json_type(const nlohmann::json& j, std::string_view kind, std::string_view source) {
  DSPARK_CHECK(j.is_object() && j.contains("type") && j["type"].is_string(),
               "{}: {} must be an object with a \"type\" field, got {}", source, kind,
               j.dump().substr(0, 200));
  return j["type"].get<std::string>();
}

SplitPatternSpec SplitPatternSpec::parse(const nlohmann::json& pattern, std::string_view source) {
  SplitPatternSpec spec;
  if (pattern.is_object() && pattern.contains("Regex")) {
    spec.regex = std::make_shared<const Regex>(pattern["Regex"].get<std::string>(), source);
  } else if (pattern.is_object() && pattern.contains("String")) {
    spec.literal = pattern["String"].get<std::string>();
  } else if (pattern.is_string()) {
    spec.literal = pattern.get<std::string>();
  } else {
    DSPARK_FAIL("{}: unsupported pattern {} (expected {{\"String\": ...}} or {{\"Regex\": ...}})",
                source, pattern.dump().substr(0, 200));
  }
  return spec;
}

void SplitPatternSpec::find_all(std::string_view text, std::vector<Span>& out) const {
  if (regex != nullptr) {
    regex->find_all(text, out);
    return;
  }
  if (literal.empty()) return;
  for (size_t pos = 0; (pos = text.find(literal, pos)) != std::string_view::npos;
       pos += literal.size()) {
    out.push_back({pos, pos + literal.size()});
  }
}

}  // namespace dspark::tok
