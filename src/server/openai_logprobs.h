// The "logprobs" object of OpenAI responses, built from the engine's TokenLogprobs.
//
//   chat         {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token",
//                "logprob", "bytes"}]}], "refusal": null}
//   completions  {"tokens": [...], "token_logprobs": [...], "top_logprobs": [{token: logprob}],
//                "text_offset": [...]} (the legacy format; each top_logprobs entry also holds
//                the chosen token, as vLLM does)
//
// A token's text is what it adds to the decoded text after the token before it (so that a
// SentencePiece word-start token reads " cat", and the first token reads as the completion
// text begins); "bytes" holds that text's raw bytes, and invalid UTF-8 in "token" is
// replaced when the body is written. Alternatives are decoded after the same token. A log-probability of -inf (a token outside the kept
// set) is written as -9999.0, as OpenAI does, since JSON has no infinity.
#pragma once

#include <cstdint>
#include <span>

#include <nlohmann/json.hpp>

#include "engine/generation.h"
#include "tokenizer/tokenizer.h"
#include "server/openai_protocol.h"

namespace dspark {

// The text `token` adds after `previous` (-1: at the start of a text).
std::string token_piece(const Tokenizer& tokenizer, int32_t previous, int32_t token);

// Echo: what goes between the prompt's text and the completion's, given the prompt's last
// token and the completion's first: the part of the first token's text that it shows after
// the prompt but not at the start of a text (a SentencePiece word-start space, which
// decoding drops at the start); usually empty.
std::string echo_joint(const Tokenizer& tokenizer, int32_t last_prompt_token, int32_t first_output_token);

// vLLM's "prompt_logprobs": per prompt token, null for the first, else {"<token id>":
// {"logprob", "rank", "decoded_token"}} for the prompt token and its top alternatives
// (rank: 1 + the tokens more likely).
nlohmann::json vllm_prompt_logprobs(const Tokenizer& tokenizer, std::span<const int32_t> prompt,
                                    std::span<const TokenLogprob> prompt_logprobs);

// Accumulates one choice's logprobs over a response (whole, or chunk by chunk: take()
// returns what was added since the last take()).
class LogprobsBuilder {
 public:
  LogprobsBuilder(Endpoint endpoint, const Tokenizer& tokenizer) : endpoint_(endpoint), tokenizer_(tokenizer) {}

  void add(std::span<const TokenLogprob> tokens);
  // Completions with echo, before any add(): the prompt's tokens, the first without a
  // log-prob (null, as OpenAI writes it), the others with prompt_logprobs[i - 1] (null where
  // missing).
  void add_prompt(std::span<const int32_t> prompt, std::span<const TokenLogprob> prompt_logprobs);
  bool empty() const { return pending_ == 0; }
  // The logprobs object of everything added since the last take(); resets it.
  nlohmann::json take();

 private:
  std::string piece(int32_t token) const { return token_piece(tokenizer_, previous_, token); }
  nlohmann::json entry(int32_t token, float logprob) const;
  // One entry of the completions lists for `token` (null log-probs when t is null).
  void push_completion_entry(int32_t token, const TokenLogprob* t);

  Endpoint endpoint_;
  const Tokenizer& tokenizer_;
  nlohmann::json content_ = nlohmann::json::array();  // chat
  nlohmann::json tokens_ = nlohmann::json::array();   // completions: the four parallel lists
  nlohmann::json token_logprobs_ = nlohmann::json::array();
  nlohmann::json top_logprobs_ = nlohmann::json::array();
  nlohmann::json text_offset_ = nlohmann::json::array();
  int64_t text_offset_next_ = 0;  // bytes of completion text before the next token
  int64_t pending_ = 0;           // tokens added since the last take()
  int32_t previous_ = -1;         // the last token added
};

}  // namespace dspark
