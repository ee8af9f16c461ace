// Decoders of tokenizer.json ("decoder" field): they turn the vocabulary strings of a
// sequence of ids back into text, with Hugging Face tokenizers' semantics (each stage
// maps a list of strings to a list of strings; the result is their concatenation).
// Supported: ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace, Sequence.
// Anything else is rejected at load time with an error naming the type and the file.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace dspark::tok {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

// j is the "decoder" object; nullptr for JSON null (then tokens are joined with spaces).
std::unique_ptr<Decoder> make_decoder(const nlohmann::json& j, std::string_view source);

// Parses "<0xNN>" (exactly that form); returns the byte or -1.
int parse_byte_token(std::string_view token);

}  // namespace dspark::tok
