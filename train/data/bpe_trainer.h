// Byte-level BPE training.
//
// Usage: construct, add_document() for every training document, then train() once.
// Documents are cut at special-token occurrences (those never take part in merges), then
// split into pre-tokens by the pre-tokenizer regex; identical pre-tokens ("words") are
// counted once with a multiplicity. Training starts from the 256 single bytes and
// repeatedly merges the most frequent adjacent pair of symbols, counted over all words
// with their multiplicities, until the vocabulary reaches options.vocab_size (special
// tokens + 256 bytes + merges) or no pair occurs at least options.min_frequency times.
//
// Ties are broken deterministically: highest count, then the lexicographically smallest
// (left, right) pair of raw byte strings (unsigned byte order). The result does not depend
// on the order documents are added in or on hash-table iteration order.
//
// Merging keeps pair counts up to date incrementally: pair -> count, pair -> words that
// contain it, and a max-heap of pairs with lazy invalidation (a popped entry whose count is
// stale is pushed back with its current count; counts of existing pairs only ever fall).
// A merge is applied inside a word left to right without overlaps, exactly as Hugging
// Face's BPE applies it when encoding. A pair whose concatenation already is a token (made
// by a different split) is skipped: tokenizer.json cannot give one string two ids.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/bpe_model.h"
#include "data/pretokenizer.h"

namespace dspark::train {

struct BpeTrainerOptions {
  int64_t vocab_size = 8192;  // final size: special tokens + 256 bytes + merges
  int64_t min_frequency = 2;  // stop when the best pair occurs fewer times than this
  std::string pattern = std::string(kPretokenizerPattern);  // pre-tokenizer regex
  std::vector<std::string> special_tokens = {std::string(kEndOfTextToken), std::string(kPadToken),
                                             std::string(kMaskToken)};  // ids 0, 1, 2
};

struct BpeTrainStats {
  int64_t num_documents = 0;
  int64_t num_bytes = 0;         // text bytes added (special tokens excluded)
  int64_t num_pretokens = 0;     // pre-tokens counted, with repetition
  int64_t num_words = 0;         // distinct pre-tokens
  int64_t num_merges = 0;
  int64_t num_skipped_duplicates = 0;  // pairs not merged: their string was already a token
  double pretokenize_seconds = 0;
  double merge_seconds = 0;
};

class BpeTrainer {
 public:
  // Throws dspark::Error when the options are inconsistent (vocab_size below
  // specials + 256, empty or duplicate special tokens, a pattern that does not compile).
  explicit BpeTrainer(BpeTrainerOptions options = {});

  // Counts the pre-tokens of one document. text must be valid UTF-8.
  void add_document(std::string_view text);

  // Learns the merges. Call once, after the last add_document().
  BpeModel train();

  const BpeTrainStats& stats() const { return stats_; }
  const BpeTrainerOptions& options() const { return options_; }

 private:
  BpeTrainerOptions options_;
  Pretokenizer pretokenizer_;
  std::unordered_map<std::string, int64_t> word_counts_;  // pre-token bytes -> occurrences
  std::vector<std::string_view> pieces_;                  // scratch for add_document
  BpeTrainStats stats_;
  bool trained_ = false;
};

}  // namespace dspark::train
