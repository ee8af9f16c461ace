// Normalizers of tokenizer.json ("normalizer" field), applied to each piece of raw text
// between added tokens, before pre-tokenization. Supported: Sequence, Prepend, Append,
// Replace (String or Regex pattern), NFC, NFD, Strip, ByteLevel. Any other type (NFKC,
// Lowercase, BertNormalizer, Precompiled, ...) is rejected at load time with an error
// naming the type and the file, never silently ignored.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace dspark::tok {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::string& text) const = 0;
};

// j is the "normalizer" object; returns nullptr for JSON null. source names the file.
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& j, std::string_view source);

// Replaces every occurrence of from (non-empty) in text with to, left to right.
void replace_all(std::string& text, std::string_view from, std::string_view to);

}  // namespace dspark::tok
