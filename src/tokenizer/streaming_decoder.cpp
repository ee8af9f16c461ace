#include <string>

#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_decoder.h"
#include "tokenizer/tokenizer_utf8.h"

namespace dspark {

// Why a window works: decode() is local except for (a) the very first token (Metaspace
// and Strip decoders drop its leading space), (b) runs of <0xNN> byte-fallback tokens,
// which only become text when the run ends, and (c) byte-level UTF-8 sequences split
// across tokens. Keeping one already-emitted id as context handles (a) — it is the window's
// first token in both decodes, so the difference is exact — and holding text back while
// the last id is a byte token (b) or the new text ends in U+FFFD (c) handles the rest.

StreamingDecoder::StreamingDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(tokenizer), skip_special_tokens_(skip_special_tokens) {}

std::string StreamingDecoder::push(int32_t id) {
  // Ids decode() would skip contribute nothing, not even as context.
  if (id < 0 || id >= tokenizer_.vocab_size()) return {};
  const std::string_view token = tokenizer_.id_to_token(id);
  if (token.empty() || (skip_special_tokens_ && tokenizer_.is_special(id))) return {};
  ids_.push_back(id);
  if (tok::parse_byte_token(token) >= 0) return {};  // the byte run may continue

  const std::string text = tokenizer_.decode(ids_, skip_special_tokens_);
  if (text.compare(0, context_text_.size(), context_text_) != 0) return {};
  std::string fresh = text.substr(context_text_.size());
  if (fresh.size() >= tok::kReplacementChar.size() &&
      fresh.compare(fresh.size() - tok::kReplacementChar.size(), std::string::npos,
                    tok::kReplacementChar) == 0) {
    return {};  // possibly a UTF-8 sequence that later ids complete
  }
  ids_.assign(1, id);
  num_context_ = 1;
  context_text_ = tokenizer_.decode(ids_, skip_special_tokens_);
  return fresh;
}

std::string StreamingDecoder::flush() {
  if (ids_.size() == num_context_) return {};
  const std::string text = tokenizer_.decode(ids_, skip_special_tokens_);
  std::string fresh = text.compare(0, context_text_.size(), context_text_) == 0
                          ? text.substr(context_text_.size())
                          : text;
  ids_.erase(ids_.begin(), ids_.end() - 1);
  num_context_ = 1;
  context_text_ = tokenizer_.decode(ids_, skip_special_tokens_);
  return fresh;
}

}  // namespace dspark
