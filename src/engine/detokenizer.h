// Detokenizer: one request's output text, made beside the engine rather than inside it
// (the engine commits token ids; text and stop strings are the consumer's business, so
// the engine thread spends nothing on them). Decodes committed tokens incrementally
// (StreamingDecoder), holds back text that could still begin a stop string (TextStream),
// and when a stop string appears cuts the output there: the text before it, the tokens up
// to the one that completed it, finish reason "stop".
//
// The engine may have committed tokens past the stop by then, and keeps the request
// running until told: process() says when to cancel it. Later outputs of the request are
// emptied here, and its final one (the cancellation, carrying the request's usage and
// speculation counts) becomes the "stop" finish.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/request.h"
#include "engine/text_stream.h"
#include "tokenizer/tokenizer.h"

namespace dspark {

class Detokenizer {
 public:
  // keep_stop_string: the text ends with the stop string that stopped it (TextStream).
  Detokenizer(const Tokenizer& tokenizer, std::vector<std::string> stop_strings, bool keep_stop_string = false);

  // Fills out.text with the text its tokens make final and sets out.output_tokens to the
  // tokens kept so far. At a stop string: out.token_ids (and logprobs) end at the token
  // that completed it, and out finishes with kStop if the engine had finished it anyway.
  // Returns true exactly once, when the output hit a stop string while the engine is
  // still running the request: the caller cancels it there.
  bool process(RequestOutput& out);

  bool stopped() const { return text_.stopped(); }
  int64_t num_tokens() const { return num_tokens_; }

 private:
  StreamingDecoder decoder_;
  TextStream text_;
  int64_t num_tokens_ = 0;  // output tokens kept (up to the stop)
};

}  // namespace dspark
