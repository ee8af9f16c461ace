// A compiled PCRE2 pattern with the semantics the tokenizer.json regexes were written
// for (Oniguruma in Hugging Face tokenizers): UTF-8 subjects, Unicode properties for
// \p{..}, \s, \w, \d (PCRE2_UCP). Compiled once (JIT when available) and then shared
// read-only between threads; per-thread match state lives in thread_local storage.
// Subjects must be valid UTF-8 (the tokenizer validates its input once).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dspark::tok {

struct Span {
  size_t begin = 0;
  size_t end = 0;
};

class Regex {
 public:
  // context names the file/field for error messages.
  Regex(std::string_view pattern, std::string_view context);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends every non-overlapping match of text to out, left to right. An empty match
  // is reported too, and the search resumes one character later (Oniguruma's find_iter).
  void find_all(std::string_view text, std::vector<Span>& out) const;
  // Whether the pattern matches anywhere in text.
  bool search(std::string_view text) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
};

}  // namespace dspark::tok
