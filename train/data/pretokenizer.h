// Pre-tokenizer of the byte-level BPE: a Unicode regex (PCRE2 with UTF + UCP, JIT) that
// cuts text into pieces; BPE merges never cross a piece boundary. Unmatched gaps between
// matches are pieces too (Hugging Face's Split with behavior "Isolated"), so the pieces
// always cover the text exactly.
//
// kPretokenizerPattern is Llama-3's pattern with one change: numbers are split into single
// digits (\p{N}, as Qwen2 does) instead of groups of up to three. The embedded model is
// trained largely on GSM8K arithmetic, and one token per digit gives every number the same
// digit-aligned structure (place value is visible to the model), at the cost of a few more
// tokens on numbers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dspark::train {

inline constexpr std::string_view kPretokenizerPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

class Pretokenizer {
 public:
  // Throws dspark::Error naming the pattern and PCRE2's message when it does not compile.
  explicit Pretokenizer(std::string_view pattern = kPretokenizerPattern);
  ~Pretokenizer();
  Pretokenizer(const Pretokenizer&) = delete;
  Pretokenizer& operator=(const Pretokenizer&) = delete;

  // Appends the pieces of text to out (views into text). text must be valid UTF-8
  // (checked; throws dspark::Error otherwise). Safe to call from several threads.
  void split(std::string_view text, std::vector<std::string_view>& out) const;

  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
};

// Cuts text at every occurrence of the given special tokens (longest match wins at a
// position) and calls on_text(segment) for plain text and on_special(index) for a special
// token, in order. Empty segments are skipped.
template <class OnText, class OnSpecial>
void split_on_special_tokens(std::string_view text, const std::vector<std::string>& specials,
                             OnText&& on_text, OnSpecial&& on_special) {
  size_t start = 0;
  while (start < text.size()) {
    size_t best_pos = std::string_view::npos;
    int best = -1;
    for (size_t s = 0; s < specials.size(); ++s) {
      if (specials[s].empty()) continue;
      const size_t p = text.find(specials[s], start);
      if (p == std::string_view::npos) continue;
      if (p < best_pos || (p == best_pos && specials[s].size() > specials[best].size())) {
        best_pos = p;
        best = static_cast<int>(s);
      }
    }
    if (best < 0) break;
    if (best_pos > start) on_text(text.substr(start, best_pos - start));
    on_special(best);
    start = best_pos + specials[best].size();
  }
  if (start < text.size()) on_text(text.substr(start));
}

}  // namespace dspark::train
