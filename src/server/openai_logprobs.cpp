#include "server/openai_logprobs.h"

#include <cmath>
#include <string>

namespace dspark {
namespace {

using nlohmann::json;

double wire_logprob(float logprob) { return std::isfinite(logprob) ? static_cast<double>(logprob) : -9999.0; }

}  // namespace

std::string LogprobsBuilder::piece(int32_t token) const {
  if (previous_ < 0) return tokenizer_.decode(std::span<const int32_t>(&token, 1));
  const int32_t pair[2] = {previous_, token};
  const std::string head = tokenizer_.decode(std::span<const int32_t>(pair, 1));
  std::string both = tokenizer_.decode(std::span<const int32_t>(pair, 2));
  if (both.compare(0, head.size(), head) == 0) return both.substr(head.size());
  return tokenizer_.decode(std::span<const int32_t>(&token, 1));
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
    const std::string text = piece(t.token);
    tokens_.push_back(text);
    token_logprobs_.push_back(wire_logprob(t.logprob));
    json top = json::object();
    for (const auto& [id, lp] : t.top) top[piece(id)] = wire_logprob(lp);
    top[text] = wire_logprob(t.logprob);
    previous_ = t.token;
    top_logprobs_.push_back(std::move(top));
    text_offset_.push_back(text_offset_next_);
    text_offset_next_ += static_cast<int64_t>(text.size());
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
