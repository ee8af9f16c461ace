#include "tokenizer/tokenizer_post_processor.h"

#include <string>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "tokenizer/tokenizer_json.h"

namespace dspark::tok {
namespace {

SpecialTokenFrame parse_template(const nlohmann::json& j, std::string_view source) {
  SpecialTokenFrame frame;
  const auto& specials = j.contains("special_tokens") ? j["special_tokens"] : nlohmann::json::object();
  bool seen_sequence = false;
  for (const auto& item : j.at("single")) {
    if (item.contains("Sequence")) {
      seen_sequence = true;
      continue;
    }
    DSPARK_CHECK(item.contains("SpecialToken"), "{}: TemplateProcessing item {} is neither "
                 "SpecialToken nor Sequence", source, item.dump());
    const std::string name = item["SpecialToken"].at("id").get<std::string>();
    DSPARK_CHECK(specials.contains(name), "{}: TemplateProcessing uses special token '{}' that "
                 "is missing from special_tokens", source, name);
    auto& target = seen_sequence ? frame.suffix : frame.prefix;
    for (const auto& id : specials[name].at("ids")) target.push_back(id.get<int32_t>());
  }
  return frame;
}

}  // namespace

SpecialTokenFrame parse_post_processor(const nlohmann::json& j, std::string_view source) {
  if (j.is_null()) return {};
  const std::string type = json_type(j, "post_processor", source);
  if (type == "TemplateProcessing") return parse_template(j, source);
  if (type == "ByteLevel") return {};
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    // "cls": ["<s>", 0], "sep": ["</s>", 2]
    return {{j.at("cls").at(1).get<int32_t>()}, {j.at("sep").at(1).get<int32_t>()}};
  }
  if (type == "Sequence") {
    // Each processor wraps the result of the previous one.
    SpecialTokenFrame frame;
    for (const auto& item : j.at("processors")) {
      SpecialTokenFrame inner = parse_post_processor(item, source);
      inner.prefix.insert(inner.prefix.end(), frame.prefix.begin(), frame.prefix.end());
      frame.prefix = std::move(inner.prefix);
      frame.suffix.insert(frame.suffix.end(), inner.suffix.begin(), inner.suffix.end());
    }
    return frame;
  }
  DSPARK_FAIL("{}: unsupported post_processor type '{}' (supported: TemplateProcessing, "
              "ByteLevel, RobertaProcessing, BertProcessing, Sequence)",
              source, type);
}

}  // namespace dspark::tok
