#include "server/openai_logprobs.h"

#include <cmath>
#include <string>

#include "core/check.h"

namespace dspark {
namespace {

using nlohmann::json;

double wire_logprob(float logprob) { return std::isfinite(logprob) ? static_cast<double>(logprob) : -9999.0; }

}  // namespace

// Special tokens read as the text shows them: skipped (a BOS before an echoed prompt is "").
std::string token_piece(const Tokenizer& tokenizer, int32_t previous, int32_t token) {
  constexpr bool kSkipSpecial = true;
  if (previous < 0) return tokenizer.decode(std::span<const int32_t>(&token, 1), kSkipSpecial);
  const int32_t pair[2] = {previous, token};
  const std::string head = tokenizer.decode(std::span<const int32_t>(pair, 1), kSkipSpecial);
  std::string both = tokenizer.decode(std::span<const int32_t>(pair, 2), kSkipSpecial);
  if (both.compare(0, head.size(), head) == 0) return both.substr(head.size());
  return tokenizer.decode(std::span<const int32_t>(&token, 1), kSkipSpecial);
}

std::string echo_joint(const Tokenizer& tokenizer, int32_t last_prompt_token, int32_t first_output_token) {
  const std::string in_context = token_piece(tokenizer, last_prompt_token, first_output_token);
  const std::string alone = token_piece(tokenizer, -1, first_output_token);
  if (in_context.size() <= alone.size() || !in_context.ends_with(alone)) return {};
  return in_context.substr(0, in_context.size() - alone.size());
}

json vllm_prompt_logprobs(const Tokenizer& tokenizer, std::span<const int32_t> prompt,
                          std::span<const TokenLogprob> prompt_logprobs) {
  json out = json::array();
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (i == 0 || i - 1 >= prompt_logprobs.size()) {
      out.push_back(nullptr);
      continue;
    }
    const TokenLogprob& t = prompt_logprobs[i - 1];
    json entry = json::object();
    for (size_t k = 0; k < t.top.size(); ++k) {
      const auto& [id, lp] = t.top[k];
      entry[std::to_string(id)] = {{"logprob", wire_logprob(lp)},
                                   {"rank", static_cast<int64_t>(k) + 1},
                                   {"decoded_token", token_piece(tokenizer, prompt[i - 1], id)}};
    }
    entry[std::to_string(t.token)] = {{"logprob", wire_logprob(t.logprob)},
                                      {"rank", t.rank},
                                      {"decoded_token", token_piece(tokenizer, prompt[i - 1], t.token)}};
    out.push_back(std::move(entry));
  }
  return out;
}

json LogprobsBuilder::entry(int32_t token, float logprob) const {
  const std::string text = piece(token);
  json bytes = json::array();
  for (const unsigned char c : text) bytes.push_back(static_cast<int>(c));
  return {{"token", text}, {"logprob", wire_logprob(logprob)}, {"bytes", std::move(bytes)}};
}

void LogprobsBuilder::add(std::span<const TokenLogprob> tokens) {
  pending_ += static_cast<int64_t>(tokens.size());
  for (const TokenLogprob& t : tokens) {
    if (endpoint_ == Endpoint::kChat) {
      json e = entry(t.token, t.logprob);
      json top = json::array();
      for (const auto& [id, lp] : t.top) top.push_back(entry(id, lp));
      e["top_logprobs"] = std::move(top);
      content_.push_back(std::move(e));
      previous_ = t.token;
      continue;
    }
    push_completion_entry(t.token, &t);
  }
}

void LogprobsBuilder::push_completion_entry(int32_t token, const TokenLogprob* t) {
  const std::string text = piece(token);
  tokens_.push_back(text);
  if (t != nullptr) {
    token_logprobs_.push_back(wire_logprob(t->logprob));
    json top = json::object();
    for (const auto& [id, lp] : t->top) top[piece(id)] = wire_logprob(lp);  // after the same token
    top[text] = wire_logprob(t->logprob);
    top_logprobs_.push_back(std::move(top));
  } else {
    token_logprobs_.push_back(nullptr);
    top_logprobs_.push_back(nullptr);
  }
  text_offset_.push_back(text_offset_next_);
  text_offset_next_ += static_cast<int64_t>(text.size());
  previous_ = token;
}

void LogprobsBuilder::add_prompt(std::span<const int32_t> prompt, std::span<const TokenLogprob> prompt_logprobs) {
  DSPARK_CHECK(endpoint_ == Endpoint::kCompletions && pending_ == 0 && previous_ < 0,
               "LogprobsBuilder: the prompt goes first, and only into completions");
  for (size_t i = 0; i < prompt.size(); ++i) {
    push_completion_entry(prompt[i], i > 0 && i - 1 < prompt_logprobs.size() ? &prompt_logprobs[i - 1] : nullptr);
    ++pending_;
  }
}

json LogprobsBuilder::take() {
  pending_ = 0;
  json out;
  if (endpoint_ == Endpoint::kChat) {
    out = {{"content", std::move(content_)}, {"refusal", nullptr}};
    content_ = json::array();
    return out;
  }
  out = {{"tokens", std::move(tokens_)},
         {"token_logprobs", std::move(token_logprobs_)},
         {"top_logprobs", std::move(top_logprobs_)},
         {"text_offset", std::move(text_offset_)}};
  tokens_ = json::array();
  token_logprobs_ = json::array();
  top_logprobs_ = json::array();
  text_offset_ = json::array();
  return out;
}

}  // namespace dspark
