#include "server/tokenize_handler.h"

#include <fmt/format.h>

#include "core/check.h"
#include "server/openai_protocol.h"

namespace dspark {
namespace {

using nlohmann::json;

json parse_object(std::string_view body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw ApiError::bad_request("the request body is not valid JSON", {}, "invalid_json");
  if (!j.is_object()) throw ApiError::bad_request("the request body must be a JSON object", {}, "invalid_json");
  return j;
}

void check_model(const json& body, const TokenizeContext& ctx) {
  auto it = body.find("model");
  if (it == body.end() || it->is_null()) return;
  if (!it->is_string()) throw ApiError::bad_request("'model' must be a string", "model", "invalid_type");
  if (*it != ctx.model_name) throw ApiError::model_not_found(it->get<std::string>(), ctx.model_name);
}

}  // namespace

json tokenize(std::string_view text, const TokenizeContext& ctx) {
  const json body = parse_object(text);
  check_model(body, ctx);
  std::vector<int32_t> ids;
  try {
    if (body.contains("messages")) {
      const ParsedRequest request = parse_request(text, Endpoint::kChat);
      ids = ctx.tokenizer.encode(ctx.chat_format.render(request.chat), ctx.chat_format.add_special_tokens());
    } else {
      auto prompt = body.find("prompt");
      if (prompt == body.end() || !prompt->is_string()) {
        throw ApiError::bad_request("'prompt' (a string) or 'messages' is required", "prompt",
                                    "missing_required_parameter");
      }
      bool add_special = true;
      if (auto add = body.find("add_special_tokens"); add != body.end() && !add->is_null()) {
        if (!add->is_boolean()) throw ApiError::bad_request("'add_special_tokens' must be a boolean", "add_special_tokens");
        add_special = add->get<bool>();
      }
      ids = ctx.tokenizer.encode(prompt->get<std::string>(), add_special);
    }
  } catch (const ApiError&) {
    throw;
  } catch (const Error& e) {
    throw ApiError::bad_request(e.message(), body.contains("messages") ? "messages" : "prompt");
  }
  return {{"count", ids.size()}, {"max_model_len", ctx.max_model_len}, {"tokens", ids}};
}

json detokenize(std::string_view text, const TokenizeContext& ctx) {
  const json body = parse_object(text);
  check_model(body, ctx);
  auto tokens = body.find("tokens");
  if (tokens == body.end() || !tokens->is_array()) {
    throw ApiError::bad_request("'tokens' (a list of token ids) is required", "tokens", "missing_required_parameter");
  }
  std::vector<int32_t> ids;
  for (const json& t : *tokens) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= ctx.vocab_size) {
      throw ApiError::bad_request(fmt::format("'tokens': {} is not a token id in [0, {})", t.dump(), ctx.vocab_size),
                                  "tokens");
    }
    ids.push_back(t.get<int32_t>());
  }
  return {{"prompt", ctx.tokenizer.decode(ids)}};
}

}  // namespace dspark
