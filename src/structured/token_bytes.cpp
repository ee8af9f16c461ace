#include "structured/token_bytes.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "core/check.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_decoder.h"
#include "tokenizer/tokenizer_utf8.h"

namespace dspark {

namespace {

// As the ByteLevel decoder reads one token: alphabet characters are bytes; a string with
// any other character is its own UTF-8.
std::string byte_level_bytes(std::string_view token) {
  std::string out;
  size_t pos = 0;
  while (pos < token.size()) {
    const int b = tok::byte_level_byte(tok::utf8_next(token, pos));
    if (b < 0) return std::string(token);
    out.push_back(static_cast<char>(b));
  }
  return out;
}

// As Replace("▁", " ") + ByteFallback (or Metaspace) read one token.
std::string sentencepiece_bytes(std::string_view token) {
  const int b = tok::parse_byte_token(token);
  if (b >= 0) return std::string(1, static_cast<char>(b));
  std::string out(token);
  tok::replace_all(out, "\xE2\x96\x81", " ");
  return out;
}

std::string scheme_bytes(TokenByteScheme scheme, std::string_view token) {
  return scheme == TokenByteScheme::kByteLevel ? byte_level_bytes(token)
                                               : sentencepiece_bytes(token);
}

bool is_ascii_alnum(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  });
}

}  // namespace

TokenBytes token_bytes(const Tokenizer& tokenizer, int64_t num_logits,
                       std::span<const int32_t> eos_ids) {
  DSPARK_CHECK(num_logits > 0, "token_bytes: num_logits must be positive, got {}", num_logits);
  const int64_t vocab = std::min(num_logits, tokenizer.vocab_size());
  TokenBytes out;
  out.bytes.assign(static_cast<size_t>(num_logits), std::string());
  out.roles.assign(static_cast<size_t>(num_logits), TokenRole::kNone);

  // Candidate text tokens: everything but EOS, special tokens and unused ids.
  std::vector<uint8_t> is_eos(static_cast<size_t>(num_logits), 0);
  for (const int32_t id : eos_ids) {
    if (id >= 0 && id < num_logits) is_eos[id] = 1;
  }
  std::vector<int32_t> candidates;
  candidates.reserve(static_cast<size_t>(vocab));
  int32_t anchor = -1;
  for (int32_t id = 0; id < vocab; ++id) {
    if (is_eos[id] || tokenizer.is_special(id) || tokenizer.id_to_token(id).empty()) continue;
    candidates.push_back(id);
    // A plain ASCII word means the same under both schemes and has no leading space.
    if (anchor < 0 && is_ascii_alnum(tokenizer.id_to_token(id)) &&
        tokenizer.decode(std::span<const int32_t>(&id, 1)) == tokenizer.id_to_token(id)) {
      anchor = id;
    }
  }
  DSPARK_CHECK(anchor >= 0, "token_bytes: the vocabulary has no plain ASCII token to anchor "
               "the decoder check");
  const std::string anchor_text = tokenizer.decode(std::span<const int32_t>(&anchor, 1));

  // For each candidate: what decode() says it adds after the anchor ("" with ok = false
  // when the anchor's text is not a prefix, which neither scheme predicts).
  constexpr std::array kSchemes = {TokenByteScheme::kByteLevel, TokenByteScheme::kSentencePiece};
  std::array<std::vector<uint8_t>, 2> wrong;  // [2][candidates] decode() disagrees
  std::array<int64_t, 2> num_wrong = {0, 0};
  std::array<int64_t, 2> num_right = {0, 0};
  for (auto& w : wrong) w.assign(candidates.size(), 0);
  for (size_t k = 0; k < candidates.size(); ++k) {
    const std::array<int32_t, 2> pair = {anchor, candidates[k]};
    const std::string text = tokenizer.decode(pair);
    const bool has_prefix = text.compare(0, anchor_text.size(), anchor_text) == 0;
    const std::string_view added =
        has_prefix ? std::string_view(text).substr(anchor_text.size()) : std::string_view();
    for (size_t s = 0; s < kSchemes.size(); ++s) {
      const std::string bytes = scheme_bytes(kSchemes[s], tokenizer.id_to_token(candidates[k]));
      // A token holding part of a UTF-8 character decodes to U+FFFD on its own: nothing
      // to compare; the scheme is trusted for it.
      if (!tok::utf8_is_valid(bytes)) continue;
      if (has_prefix && bytes == added) {
        ++num_right[s];
      } else {
        wrong[s][k] = 1;
        ++num_wrong[s];
      }
    }
  }
  // Fewer contradictions wins; on a tie, the scheme decode() confirmed more often (the
  // other one skipped tokens it could not check).
  const size_t best = num_wrong[0] != num_wrong[1] ? (num_wrong[0] < num_wrong[1] ? 0 : 1)
                                                   : (num_right[0] >= num_right[1] ? 0 : 1);
  out.scheme = kSchemes[best];
  out.num_disagreeing = num_wrong[best];
  DSPARK_CHECK(out.num_disagreeing * 100 <= static_cast<int64_t>(candidates.size()),
               "token_bytes: decode() contradicts both byte schemes for {} of {} tokens (the "
               "tokenizer's decoder is neither byte-level nor SentencePiece-style)",
               out.num_disagreeing, candidates.size());

  for (size_t k = 0; k < candidates.size(); ++k) {
    if (wrong[best][k]) continue;
    const int32_t id = candidates[k];
    std::string bytes = scheme_bytes(out.scheme, tokenizer.id_to_token(id));
    if (bytes.empty()) continue;  // a token that adds nothing could repeat forever
    out.bytes[id] = std::move(bytes);
    out.roles[id] = TokenRole::kText;
  }
  for (int32_t id = 0; id < num_logits; ++id) {
    if (is_eos[id]) out.roles[id] = TokenRole::kEos;
  }
  return out;
}

int32_t max_text_token_bytes(const TokenBytes& vocabulary) {
  size_t most = 0;
  for (int64_t id = 0; id < vocabulary.size(); ++id) {
    if (vocabulary.roles[static_cast<size_t>(id)] == TokenRole::kText) {
      most = std::max(most, vocabulary.bytes[static_cast<size_t>(id)].size());
    }
  }
  return static_cast<int32_t>(most);
}

}  // namespace dspark
