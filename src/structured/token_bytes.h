// The bytes each token id adds to the output text: what a byte-level grammar (JsonMatcher)
// needs to judge a token. Built once per model, immutable.
//
// The Tokenizer stores vocabulary strings, not bytes, and its decoder is internal, so the
// bytes are derived under the two schemes the tokenizer supports and the right one is
// chosen by asking decode() itself:
//   - byte level (GPT-2, Llama-3, Qwen): every character of the vocabulary string stands
//     for one byte (tokenizer/byte_level.h); a string with a character outside that alphabet
//     stands for its own UTF-8, as the ByteLevel decoder does;
//   - SentencePiece style (Llama-2, Mistral, stories260K): "<0xNN>" is byte NN, and
//     U+2581 "▁" is a space.
// For every text token t whose bytes under a scheme are valid UTF-8 on their own, that
// scheme predicts decode({a, t}) = decode({a}) + bytes(t) for a plain anchor token a (the
// anchor keeps the decoder's first-token rules, such as stripping a leading space, out of
// the comparison). The scheme with fewer wrong predictions wins; tokens it still gets
// wrong are marked kNone (never allowed), and more than 1% of them is an error (a decoder
// neither scheme describes). Cost: one decode per vocabulary entry (~1 s for 150K).
//
// One known difference from the text a client sees: SentencePiece decoders strip the
// leading space of the whole output, so a first token "▁{" reads " {" here but "{" in
// the response. Both are valid JSON prefixes (JsonMatcher allows leading whitespace).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dspark {

class Tokenizer;

enum class TokenRole : uint8_t {
  kText,  // adds bytes[id] (non-empty) to the text
  kEos,   // ends the request: allowed exactly when the constrained text is complete
  kNone,  // never allowed: special/control tokens, unused ids, padding rows, empty tokens
};

enum class TokenByteScheme : uint8_t { kByteLevel, kSentencePiece };

struct TokenBytes {
  std::vector<std::string> bytes;  // [num_logits] the token's bytes; "" unless kText
  std::vector<TokenRole> roles;    // [num_logits]
  TokenByteScheme scheme = TokenByteScheme::kByteLevel;  // the one decode() agreed with
  int64_t num_disagreeing = 0;     // text tokens decode() contradicted (now kNone)

  int64_t size() const { return static_cast<int64_t>(roles.size()); }
};

// num_logits: width of a logits row; ids from tokenizer.vocab_size() up to it (padding
// rows of a larger embedding) are kNone. eos_ids: the ids that end a request (usually
// tokenizer.eos_ids()); ids outside [0, num_logits) are ignored.
TokenBytes token_bytes(const Tokenizer& tokenizer, int64_t num_logits,
                       std::span<const int32_t> eos_ids);

// The most bytes of any kText token.
int32_t max_text_token_bytes(const TokenBytes& vocabulary);

}  // namespace dspark
