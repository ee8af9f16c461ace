#include "tokenizer/tokenizer_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/check.h"
#include "tokenizer/tokenizer_utf8.h"

namespace dspark::tok {
namespace {

// Match data and JIT stack, one set per thread, reused by every pattern.
struct MatchState {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
  MatchState() {
    data = pcre2_match_data_create(1, nullptr);
    context = pcre2_match_context_create(nullptr);
    // Long whitespace or letter runs need more than the default 32 KiB JIT stack.
    jit_stack = pcre2_jit_stack_create(64 * 1024, 8 * 1024 * 1024, nullptr);
    if (context != nullptr && jit_stack != nullptr) {
      pcre2_jit_stack_assign(context, nullptr, jit_stack);
    }
  }
  ~MatchState() {
    pcre2_match_data_free(data);
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(jit_stack);
  }
};

MatchState& match_state() {
  thread_local MatchState state;
  return state;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

Regex::Regex(std::string_view pattern, std::string_view context) : pattern_(pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                    PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  DSPARK_CHECK(code != nullptr, "{}: cannot compile regex '{}' at offset {}: {}", context,
               pattern, offset, pcre2_message(error));
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter on failure
  code_ = code;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void Regex::find_all(std::string_view text, std::vector<Span>& out) const {
  MatchState& state = match_state();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos <= text.size()) {
    const int rc = pcre2_match(static_cast<pcre2_code*>(code_), subject, text.size(), pos,
                               PCRE2_NO_UTF_CHECK, state.data, state.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    DSPARK_CHECK(rc >= 0, "regex '{}' failed on a {}-byte text: {}", pattern_, text.size(),
                 pcre2_message(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
    const Span span{ovector[0], ovector[1]};
    out.push_back(span);
    if (span.end > span.begin) {
      pos = span.end;
    } else {
      if (span.end >= text.size()) break;
      pos = span.end + utf8_seq_len(static_cast<unsigned char>(text[span.end]));
    }
  }
}

bool Regex::search(std::string_view text) const {
  MatchState& state = match_state();
  const int rc = pcre2_match(static_cast<pcre2_code*>(code_),
                             reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0,
                             PCRE2_NO_UTF_CHECK, state.data, state.context);
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  DSPARK_CHECK(rc >= 0, "regex '{}' failed: {}", pattern_, pcre2_message(rc));
  return true;
}

}  // namespace dspark::tok
