// BOS/EOS and add_bos_token/add_eos_token from the files next to tokenizer.json:
// tokenizer_config.json (bos_token / eos_token as a string or {"content": ...},
// add_bos_token, add_eos_token) and generation_config.json (bos_token_id, eos_token_id as
// an int or a list; its EOS list wins because it is what generation stops on).
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/tokenizer_json.h"

namespace dspark {
namespace {

// "bos_token": "<s>" or {"content": "<s>", ...}; empty when absent or null.
std::string token_content(const nlohmann::json& config, const char* field) {
  if (!config.contains(field)) return {};
  const auto& v = config[field];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    return v["content"].get<std::string>();
  }
  return {};
}

std::optional<bool> optional_bool(const nlohmann::json& config, const char* field) {
  if (config.contains(field) && config[field].is_boolean()) return config[field].get<bool>();
  return std::nullopt;
}

}  // namespace

void Tokenizer::Impl::apply_model_configs(const std::filesystem::path& dir) {
  nlohmann::json tok_config = nlohmann::json::object();
  nlohmann::json gen_config = nlohmann::json::object();
  if (std::filesystem::exists(dir / "tokenizer_config.json")) {
    tok_config = tok::read_json_file(dir / "tokenizer_config.json");
  }
  if (std::filesystem::exists(dir / "generation_config.json")) {
    gen_config = tok::read_json_file(dir / "generation_config.json");
  }
  const std::string tok_source = (dir / "tokenizer_config.json").string();
  const std::string gen_source = (dir / "generation_config.json").string();

  auto resolve = [&](const std::string& content, const char* field) -> int32_t {
    if (content.empty()) return -1;
    const auto id = token_to_id(content);
    DSPARK_CHECK(id.has_value(), "{}: {} '{}' is not a token of {}", tok_source, field, content,
                 source);
    return *id;
  };
  const int32_t config_bos = resolve(token_content(tok_config, "bos_token"), "bos_token");
  const int32_t config_eos = resolve(token_content(tok_config, "eos_token"), "eos_token");

  try {
    if (config_bos >= 0) {
      bos_id = config_bos;
    } else if (gen_config.contains("bos_token_id") && gen_config["bos_token_id"].is_number_integer()) {
      bos_id = gen_config["bos_token_id"].get<int32_t>();
    }
    std::vector<int32_t> gen_eos;
    if (gen_config.contains("eos_token_id")) {
      const auto& e = gen_config["eos_token_id"];
      if (e.is_number_integer()) {
        gen_eos.push_back(e.get<int32_t>());
      } else if (e.is_array()) {
        for (const auto& x : e) gen_eos.push_back(x.get<int32_t>());
      }
    }
    if (!gen_eos.empty()) {
      eos_ids = gen_eos;
    } else if (config_eos >= 0) {
      eos_ids = {config_eos};
    }
  } catch (const nlohmann::json::exception& e) {
    DSPARK_FAIL("{}: invalid eos_token_id/bos_token_id: {}", gen_source, e.what());
  }
  // An explicit add_bos_token/add_eos_token overrides the post_processor template, as
  // transformers' Llama tokenizers rebuild their template from these flags.
  if (const auto add_bos = optional_bool(tok_config, "add_bos_token")) {
    frame.prefix.clear();
    if (*add_bos) {
      DSPARK_CHECK(bos_id >= 0, "{}: add_bos_token is true but no BOS token is configured",
                   tok_source);
      frame.prefix.push_back(bos_id);
    }
  }
  if (const auto add_eos = optional_bool(tok_config, "add_eos_token")) {
    frame.suffix.clear();
    if (*add_eos) {
      const int32_t eos = config_eos >= 0 ? config_eos : (eos_ids.empty() ? -1 : eos_ids[0]);
      DSPARK_CHECK(eos >= 0, "{}: add_eos_token is true but no EOS token is configured",
                   tok_source);
      frame.suffix.push_back(eos);
    }
  }
}

}  // namespace dspark
