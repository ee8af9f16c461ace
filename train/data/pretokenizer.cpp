#define PCRE2_CODE_UNIT_WIDTH 8
#include "data/pretokenizer.h"

#include <pcre2.h>

#include <memory>

#include "core/check.h"
#include "tokenizer/tokenizer_utf8.h"

namespace dspark::train {
namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

struct MatchDataDeleter {
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};

}  // namespace

Pretokenizer::Pretokenizer(std::string_view pattern) : pattern_(pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern_.data()), pattern_.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  DSPARK_CHECK(code != nullptr, "pre-tokenizer pattern '{}' does not compile at offset {}: {}",
               pattern_, offset, pcre2_message(error));
  // JIT is a speed-up only; the interpreter gives the same matches when it is unavailable.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  code_ = code;
}

Pretokenizer::~Pretokenizer() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void Pretokenizer::split(std::string_view text, std::vector<std::string_view>& out) const {
  DSPARK_CHECK(tok::utf8_is_valid(text), "pre-tokenizer input is not valid UTF-8 (starts '{}')",
               text.substr(0, 40));
  auto* code = static_cast<pcre2_code*>(code_);
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> match(
      pcre2_match_data_create_from_pattern(code, nullptr));
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t gap = 0;  // start of text not yet covered by a piece
  size_t pos = 0;  // where the next match attempt starts
  while (pos < text.size()) {
    const int rc = pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, match.get(),
                               nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    DSPARK_CHECK(rc > 0, "pre-tokenizer match failed: {}", pcre2_message(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match.get());
    const size_t begin = ov[0];
    const size_t end = ov[1];
    if (end == begin) {
      // An empty match makes no piece: retry one character later, the skipped character
      // stays in the gap.
      pos = begin + 1;
      while (pos < text.size() && (static_cast<uint8_t>(text[pos]) & 0xC0) == 0x80) ++pos;
      continue;
    }
    if (begin > gap) out.push_back(text.substr(gap, begin - gap));
    out.push_back(text.substr(begin, end - begin));
    gap = pos = end;
  }
  if (gap < text.size()) out.push_back(text.substr(gap));
}

}  // namespace dspark::train
