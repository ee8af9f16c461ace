#include "engine/detokenizer.h"

namespace dspark {

Detokenizer::Detokenizer(const Tokenizer& tokenizer, std::vector<std::string> stop_strings, bool keep_stop_string)
    : decoder_(tokenizer), text_(std::move(stop_strings), keep_stop_string) {}

bool Detokenizer::process(RequestOutput& out) {
  out.text.clear();
  if (text_.stopped()) {  // committed after the stop: never shown
    out.token_ids.clear();
    out.logprobs.clear();
    if (out.finished) {
      out.finish_reason = FinishReason::kStop;
      out.error.clear();
    }
    out.output_tokens = num_tokens_;
    return false;
  }
  for (size_t i = 0; i < out.token_ids.size(); ++i) {
    out.text += text_.append(decoder_.push(out.token_ids[i]));
    ++num_tokens_;
    if (text_.stopped()) {
      out.token_ids.resize(i + 1);
      if (!out.logprobs.empty()) out.logprobs.resize(i + 1);
      out.text += text_.finish();
      out.output_tokens = num_tokens_;
      if (out.finished) {
        out.finish_reason = FinishReason::kStop;
        out.error.clear();
        return false;
      }
      return true;
    }
  }
  if (out.finished) {
    // A cancelled or failed request keeps what was final; an unfinished character or a
    // held-back stop-string prefix of a complete one is released. (kStop here is a JSON
    // value that completed, never a stop string, handled above: its last token's text
    // may still be held back, e.g. a byte-fallback '}', and belongs to the output.)
    if (out.finish_reason != FinishReason::kCancelled && out.finish_reason != FinishReason::kError) {
      out.text += text_.append(decoder_.flush());
    }
    out.text += text_.finish();
  }
  out.output_tokens = num_tokens_;
  return false;
}

}  // namespace dspark
