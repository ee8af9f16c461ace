// The BPE model of tokenizer.json ("model": {"type": "BPE", ...}): vocabulary, ranked
// merges, unk_token / fuse_unk, byte_fallback (<0xNN> tokens for characters outside the
// vocabulary, SentencePiece style), ignore_merges (a word found whole in the vocabulary
// is one token, as Llama-3 sets), continuing_subword_prefix / end_of_word_suffix.
// encode_word() turns one pre-token into ids by repeatedly applying the lowest-ranked
// applicable merge (leftmost on ties), exactly as Hugging Face tokenizers does.
// Immutable after construction; encode_word() is safe to call from many threads, each
// with its own BpeScratch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace dspark::tok {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Reusable per-caller buffers, so encoding a word does not allocate.
struct BpeScratch {
  struct Symbol {
    int32_t id;
    int32_t prev;  // index of the previous live symbol, -1 at the start
    int32_t next;  // index of the next live symbol, -1 at the end
    int32_t len;   // bytes of the word it covers; 0 once merged into its left neighbour
  };
  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t new_id;
  };
  std::vector<Symbol> symbols;    // [num_chars]
  std::vector<Candidate> heap;    // [num pending merges]
  std::string key;                // prefix/suffix-decorated character
  // Words already encoded in this call: word -> (offset, count) in cached_ids. Bounded.
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>, StringHash, std::equal_to<>>
      cache;
  std::vector<int32_t> cached_ids;  // [total ids of cached words]
};

using VocabMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  // model is the "model" object of tokenizer.json; source names the file for errors.
  BpeModel(const nlohmann::json& model, std::string_view source);

  // Appends the ids of one pre-token (a word after normalization and pre-tokenization).
  void encode_word(std::string_view word, std::vector<int32_t>& out, BpeScratch& scratch) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  const VocabMap& vocab() const { return vocab_; }
  int32_t max_id() const { return max_id_; }
  bool byte_fallback() const { return byte_fallback_; }

 private:

  int32_t lookup_char(std::string_view ch, bool is_first, bool is_last, BpeScratch& s) const;
  // Characters -> symbols -> merges, for a word or an independent part of one.
  void encode_part(std::string_view part, std::vector<int32_t>& out, BpeScratch& s) const;
  void encode_symbols(std::string_view part, std::vector<int32_t>& out, BpeScratch& s) const;
  void merge_all(BpeScratch& s) const;

  VocabMap vocab_;
  int32_t max_id_ = -1;
  std::vector<uint64_t> merge_keys_;    // [capacity] (left << 32 | right) + 1, 0 = empty
  std::vector<int32_t> merge_ranks_;    // [capacity]
  std::vector<int32_t> merge_ids_;      // [capacity]
  uint64_t merge_mask_ = 0;
  std::vector<int32_t> char_ids_;       // [0x10000] id of the one-character token, -1 none
  std::vector<int32_t> byte_ids_;       // [256] id of <0xNN>, -1 when missing
  int32_t unk_id_ = -1;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  std::string prefix_;                  // continuing_subword_prefix
  std::string suffix_;                  // end_of_word_suffix
  // "▁" when no vocabulary token has it after another character: then no merge can join
  // across the start of a "▁" run, and a long word (SentencePiece-style models have no
  // pre-tokenizer, so the whole text is one word) is encoded run by run. Empty otherwise.
  std::string word_start_;

  bool find_merge(int32_t left, int32_t right, int32_t* rank, int32_t* new_id) const;
};

}  // namespace dspark::tok
