#include "structured/json_lexer.h"

#include <type_traits>

namespace dspark {

// The matchers embed a lexer in the state they copy once per trie level (json_lexer.h).
static_assert(sizeof(JsonScalarLexer) == 8 && std::is_trivially_copyable_v<JsonScalarLexer>);

uint8_t JsonScalarLexer::completion_byte() const {
  switch (state_) {
    case State::kString: return '"';
    case State::kUtf8: return utf8_lo_;
    case State::kEscape: return 'n';
    case State::kHex:
      // A pending low surrogate needs D then C-F; anything else takes '0', which can
      // never start a surrogate (D8 high waits for its pair in kLowBackslash).
      return low_surrogate_ && aux_ == 0 ? 'D' : low_surrogate_ && aux_ == 1 ? 'C' : '0';
    case State::kLowBackslash: return '\\';
    case State::kLowU: return 'u';
    case State::kNumMinus:
    case State::kNumDot:
    case State::kNumExp:
    case State::kNumExpSign:
      return '0';
    case State::kNumZero:
    case State::kNumInt:
    case State::kNumFrac:
    case State::kNumExpDigits:
      return 0;
  }
  return 0;
}

}  // namespace dspark
