// Pre-tokenizers of tokenizer.json ("pre_tokenizer" field): they cut a normalized piece
// of text into the words the BPE model sees, with Hugging Face tokenizers' semantics.
// Supported: ByteLevel (GPT-2 regex, add_prefix_space, byte -> alphabet mapping), Split
// (String or Regex pattern, all five delimiter behaviours, invert), Metaspace
// (replacement, prepend_scheme first/always/never, split), Sequence, Digits, Whitespace,
// WhitespaceSplit, Punctuation. Anything else is rejected at load time.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tokenizer/tokenizer_regex.h"

namespace dspark::tok {

struct PreToken {
  std::string text;
  bool at_start = false;  // begins at offset 0 of the encoded text (Metaspace "first")
};

// What happens to the matches of a split pattern (Hugging Face SplitDelimiterBehavior).
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

SplitBehavior parse_split_behavior(std::string_view name, std::string_view source);

// Cuts [0, text_size) at matches (sorted, non-overlapping) per behaviour and appends the
// kept non-empty spans to out. invert swaps the roles of matches and the gaps between them.
void split_spans(size_t text_size, const std::vector<Span>& matches, SplitBehavior behavior,
                 bool invert, std::vector<Span>& out);

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces pieces by their pre-tokens, in order.
  virtual void pre_tokenize(std::vector<PreToken>& pieces) const = 0;
};

// j is the "pre_tokenizer" object; nullptr for JSON null. source names the file.
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& j, std::string_view source);

}  // namespace dspark::tok
