// A grammar over token sequences as the engine's other parts see it: which tokens may come
// next. structured/json_constraint.h implements it (response_format, forced tool calls); a
// drafter given one (spec/proposer.h DraftRequest::grammar) draws each draft among the
// tokens it allows, so that no draft is drawn only to be cut before verification.
#pragma once

#include <cstdint>
#include <span>

namespace dspark {

class TokenGrammar {
 public:
  virtual ~TokenGrammar() = default;
  // The tokens allowed after the committed output and then `drafts_before` (each of which
  // must have been allowed): [ceil(vocab / 64)] words, token t allowed when bit t % 64 of
  // word t / 64 is set. Valid until the next call.
  virtual std::span<const uint64_t> allowed_tokens(std::span<const int32_t> drafts_before) = 0;

  static bool allows(std::span<const uint64_t> bits, int64_t token) {
    return ((bits[static_cast<size_t>(token >> 6)] >> (token & 63)) & 1) != 0;
  }
};

}  // namespace dspark
