// What the tokenizer.json "post_processor" adds around a single encoded sequence when
// special tokens are requested: TemplateProcessing ("single" template), Roberta/Bert
// processing (cls ... sep), ByteLevel (nothing), Sequence of those. Only the special
// tokens before and after the sequence matter here (no pairs, no type ids).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace dspark::tok {

struct SpecialTokenFrame {
  std::vector<int32_t> prefix;  // e.g. [BOS]
  std::vector<int32_t> suffix;  // e.g. [EOS]
};

// j is the "post_processor" object (null: empty frame). source names the file.
SpecialTokenFrame parse_post_processor(const nlohmann::json& j, std::string_view source);

}  // namespace dspark::tok
