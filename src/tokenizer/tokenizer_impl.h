// Internal state of dspark::Tokenizer, shared by its translation units (loading,
// encoding/decoding, special-token configuration). Immutable once built.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/bpe_model.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_added_tokens.h"
#include "tokenizer/tokenizer_decoder.h"
#include "tokenizer/tokenizer_post_processor.h"

namespace dspark {

struct Tokenizer::Impl {
  std::string source;                              // tokenizer.json path, for messages
  std::unique_ptr<tok::BpeModel> model;
  std::vector<tok::AddedToken> added_tokens;
  tok::VocabMap added_ids;                         // added token content -> id
  tok::AddedTokenMatcher raw_matcher;              // normalized == false, on raw text
  tok::AddedTokenMatcher normalized_matcher;       // normalized == true, after normalizer
  std::unique_ptr<tok::Normalizer> normalizer;     // null: none
  std::unique_ptr<tok::PreTokenizer> pre_tokenizer;  // null: the whole piece is one word
  std::unique_ptr<tok::Decoder> decoder;           // null: tokens joined with spaces
  std::vector<std::string> id_to_token;            // [vocab_size] "" for unused ids
  std::vector<uint8_t> is_special;                 // [vocab_size]
  tok::SpecialTokenFrame frame;                    // what add_special_tokens adds
  int32_t bos_id = -1;
  std::vector<int32_t> eos_ids;

  // Loads tokenizer.json; bos/eos come from the post_processor only.
  static std::unique_ptr<Impl> load(const std::filesystem::path& tokenizer_json);
  // Applies tokenizer_config.json / generation_config.json found in dir (both optional).
  void apply_model_configs(const std::filesystem::path& dir);
  std::optional<int32_t> token_to_id(std::string_view token) const;
};

}  // namespace dspark
