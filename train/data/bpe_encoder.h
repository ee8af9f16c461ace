// Reference encoder/decoder for a BpeModel, with the semantics of Hugging Face's BPE
// (special tokens cut out first, pre-tokenizer pieces, then in each piece the lowest-rank
// adjacent pair is merged everywhere left to right until no merge applies). The trainer
// uses it to check what it learned; the engine uses dspark::Tokenizer instead.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/bpe_model.h"
#include "data/pretokenizer.h"

namespace dspark::train {

class BpeEncoder {
 public:
  explicit BpeEncoder(BpeModel model);

  // Token ids of text; special-token text becomes the special id.
  std::vector<int32_t> encode(std::string_view text) const;
  // Bytes of the tokens (special tokens as their text unless skip_special).
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

  const BpeModel& model() const { return model_; }

 private:
  void encode_piece(std::string_view piece, std::vector<int32_t>& out) const;

  BpeModel model_;
  Pretokenizer pretokenizer_;
  std::unordered_map<uint64_t, int32_t> rank_;  // (left << 32 | right) -> merge index
};

}  // namespace dspark::train
