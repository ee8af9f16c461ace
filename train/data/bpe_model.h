// A trained byte-level BPE vocabulary in memory, and its Hugging Face files.
//
// Id layout: the special tokens first (0 .. num_special-1, in the order given to the
// trainer; by default <|endoftext|> = 0, <|pad|> = 1, <|mask|> = 2, so their ids do not
// depend on the vocabulary size), then the 256 single bytes in byte order
// (id = num_special + byte), then one token per merge in the order learned.
//
// write_tokenizer_files() writes tokenizer.json (BPE model, Split(pattern, Isolated) +
// ByteLevel(use_regex=false) pre-tokenizer, ByteLevel decoder, special tokens as
// added_tokens with special=true), tokenizer_config.json (no BOS, add_bos_token false,
// eos_token <|endoftext|>, pad_token, mask_token, added_tokens_decoder with the ids) and
// special_tokens_map.json. Both Hugging Face tokenizers and dspark::Tokenizer load them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dspark::train {

inline constexpr std::string_view kEndOfTextToken = "<|endoftext|>";  // EOS and document separator
inline constexpr std::string_view kPadToken = "<|pad|>";
inline constexpr std::string_view kMaskToken = "<|mask|>";  // block drafters' MASK input

struct BpeModel {
  std::vector<std::string> special_tokens;               // [num_special] ids 0..num_special-1
  std::vector<std::string> tokens;                       // [vocab_size] raw bytes (special: text)
  std::vector<std::pair<int32_t, int32_t>> merges;       // [num_merges] (left id, right id)
  std::string pattern;                                   // pre-tokenizer regex

  int32_t num_special() const { return static_cast<int32_t>(special_tokens.size()); }
  int32_t byte_id(uint8_t b) const { return num_special() + b; }
  int32_t first_merge_id() const { return num_special() + 256; }
  int64_t vocab_size() const { return static_cast<int64_t>(tokens.size()); }
};

// Writes tokenizer.json, tokenizer_config.json and special_tokens_map.json into dir
// (created if missing). The output is byte-identical for identical models.
void write_tokenizer_files(const BpeModel& model, const std::filesystem::path& dir);

// Reads a tokenizer.json written by write_tokenizer_files (or any byte-level BPE
// tokenizer.json whose pre-tokenizer is Split(Regex) + ByteLevel and whose ids follow the
// layout above). Throws dspark::Error naming the file and the field that does not fit.
BpeModel read_tokenizer_json(const std::filesystem::path& path);

}  // namespace dspark::train
