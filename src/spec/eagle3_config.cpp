#include "spec/eagle3_config.h"

#include <fstream>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "model/load_quantization.h"
#include "loader/json_fields.h"
#include "spec/drafter_config.h"

namespace dspark {

using nlohmann::json;

namespace {

constexpr const char* kOriginalArchitectures[] = {"LlamaForCausalLMEagle3", "Eagle3LlamaForCausalLM"};
constexpr const char* kSpeculatorsArchitectures[] = {"Eagle3Speculator", "Eagle3DraftModel"};

bool is_one_of(const std::string& name, const auto& names) {
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

// Fields of the speculators layout; any other top-level field is an error.
const std::set<std::string>& speculators_fields() {
  static const std::set<std::string> fields = {
      "architectures",     "speculators_model_type", "speculators_version",
      "transformer_layer_config", "draft_vocab_size", "target_hidden_size",
      "eagle_aux_hidden_state_layer_ids", "norm_before_residual", "speculators_config",
      "quantization",      "torch_dtype",       "dtype",                  "transformers_version",
      // Training-side switches of the speculators package that do not change inference.
      "embed_requires_grad", "enable_sp_ulysses", "norm_before_fc",
  };
  return fields;
}

JsonFields reader(const json& object, const std::string& source, std::string prefix = "") {
  DSPARK_CHECK(object.is_object(), "{}: {} must be a JSON object, got {}", source,
               prefix.empty() ? std::string("the config") : "field '" + prefix.substr(0, prefix.size() - 1) + "'",
               describe_json(object));
  return JsonFields(object, source, std::move(prefix), JsonFields::IntRange::kInt32);
}

std::vector<int32_t> read_layer_ids(const JsonFields& r, std::string_view key) {
  std::vector<int32_t> ids;
  for (const int64_t id : r.get_ints(key)) ids.push_back(static_cast<int32_t>(id));
  return ids;
}

void parse_speculators_config(const json& object, Eagle3Config& c, const std::string& source) {
  const JsonFields r = reader(object, source, "speculators_config.");
  if (const auto algorithm = r.get_string("algorithm")) {
    DSPARK_CHECK(*algorithm == "eagle3", "{}: speculators_config.algorithm '{}' disagrees with speculators_model_type "
                 "'eagle3'", source, *algorithm);
  }
  const std::string method = r.get_string("default_proposal_method").value_or("greedy");
  DSPARK_CHECK(method == "greedy", "{}: speculators_config.default_proposal_method '{}' is not supported (only greedy)",
               source, method);
  if (const json* methods = r.find("proposal_methods")) {
    DSPARK_CHECK(methods->is_array(), "{}: field 'speculators_config.proposal_methods' must be a list, got {}", source,
                 describe_json(*methods));
    bool found = methods->empty();
    for (const json& m : *methods) {
      const JsonFields mr = reader(m, source, "speculators_config.proposal_methods[].");
      const std::optional<std::string> type = mr.get_string("proposal_type");
      DSPARK_CHECK(type, "{}: a speculators_config.proposal_methods entry has no 'proposal_type'", source);
      if (*type != method) continue;
      found = true;
      c.speculative_tokens = static_cast<int32_t>(mr.get_int("speculative_tokens", c.speculative_tokens));
    }
    DSPARK_CHECK(found, "{}: speculators_config.default_proposal_method '{}' is not among proposal_methods", source,
                 method);
  }
  if (const json* verifier = r.find("verifier")) {
    const JsonFields vr = reader(*verifier, source, "speculators_config.verifier.");
    c.verifier_name_or_path = vr.get_string("name_or_path").value_or("");
    c.verifier_architectures = vr.get_strings("architectures");
  }
}

Eagle3Config parse_speculators(const json& root, const JsonFields& r, const std::string& source) {
  for (const auto& [key, value] : root.items()) {
    DSPARK_CHECK(speculators_fields().contains(key),
                 "{}: unknown field '{}' in an eagle3 speculators config (known: architectures, "
                 "transformer_layer_config, draft_vocab_size, target_hidden_size, eagle_aux_hidden_state_layer_ids, "
                 "norm_before_residual, speculators_config, quantization)",
                 source, key);
  }
  DSPARK_CHECK(!r.get_bool("norm_before_fc", false), "{}: norm_before_fc true (an RMSNorm before fc) is not supported",
               source);
  Eagle3Config c;
  c.layout = Eagle3Config::Layout::kSpeculators;
  const std::vector<std::string> architectures = r.get_strings("architectures");
  if (!architectures.empty()) {
    DSPARK_CHECK(is_one_of(architectures.front(), kSpeculatorsArchitectures),
                 "{}: architectures '{}' is not an eagle3 speculator (Eagle3Speculator)", source,
                 architectures.front());
    c.architecture = architectures.front();
  }
  c.layer = ModelConfig::from_json(r.require("transformer_layer_config", "the draft layer's config"),
                                   source + " (transformer_layer_config)");
  c.draft_vocab_size = r.get_int("draft_vocab_size");
  c.target_hidden_size = r.get_int("target_hidden_size", c.layer.hidden_size);
  c.aux_hidden_state_layer_ids = read_layer_ids(r, "eagle_aux_hidden_state_layer_ids");
  c.norm_before_residual = r.get_bool("norm_before_residual", false);
  c.quantization = r.get_string("quantization").value_or("");
  if (const json* sc = r.find("speculators_config")) parse_speculators_config(*sc, c, source);
  return c;
}

Eagle3Config parse_original(const json& root, const JsonFields& r, const std::string& source) {
  Eagle3Config c;
  c.layout = Eagle3Config::Layout::kOriginal;
  c.architecture = r.get_strings("architectures").front();
  c.layer = ModelConfig::from_json(root, source);
  c.draft_vocab_size = r.get_int("draft_vocab_size", c.layer.vocab_size);
  c.target_hidden_size = r.get_int("target_hidden_size", c.layer.hidden_size);
  if (const json* eagle = r.find("eagle_config")) {
    const JsonFields er = reader(*eagle, source, "eagle_config.");
    c.aux_hidden_state_layer_ids = read_layer_ids(er, "eagle_aux_hidden_state_layer_ids");
    DSPARK_CHECK(er.get_bool("use_aux_hidden_state", true),
                 "{}: eagle_config.use_aux_hidden_state false (EAGLE-1/2 style) is not an EAGLE-3 drafter", source);
  }
  return c;
}

}  // namespace

std::vector<int32_t> Eagle3Config::aux_layer_ids(int64_t target_layers) const {
  if (!aux_hidden_state_layer_ids.empty()) return aux_hidden_state_layer_ids;
  // vLLM collects the residual stream entering layers 2, L/2 and L−3 (outputs of layers 1,
  // L/2−1 and L−4): ids 2, L/2, L−3 in the speculators convention.
  const auto l = static_cast<int32_t>(target_layers);
  return {2, l / 2, l - 3};
}

std::vector<int32_t> Eagle3Config::capture_layers(int64_t target_layers) const {
  std::vector<int32_t> out;
  for (int32_t id : aux_layer_ids(target_layers)) out.push_back(aux_layer_id_to_capture_layer(id));
  return out;
}

Eagle3Config Eagle3Config::from_json(const json& root, const std::string& source) {
  const JsonFields r = reader(root, source);
  const std::optional<std::string> type = r.get_string("speculators_model_type");
  Eagle3Config c;
  if (type) {
    DSPARK_CHECK(*type == "eagle3", "{}: speculators_model_type '{}' is not eagle3", source, *type);
    c = parse_speculators(root, r, source);
  } else {
    const std::vector<std::string> architectures = r.get_strings("architectures");
    DSPARK_CHECK(!architectures.empty() && is_one_of(architectures.front(), kOriginalArchitectures),
                 "{}: neither speculators_model_type \"eagle3\" nor architectures [\"LlamaForCausalLMEagle3\"]: not an "
                 "EAGLE-3 drafter",
                 source);
    c = parse_original(root, r, source);
  }
  c.validate(source);
  return c;
}

Eagle3Config Eagle3Config::from_file(const std::filesystem::path& path) {
  const JsonFile file = read_json_config(path, "EAGLE-3 drafter config");
  return from_json(file.root, file.source);
}

void Eagle3Config::validate(const std::string& source) const {
  check_configured_quantization(quantization, source);
  DSPARK_CHECK(layer.num_hidden_layers == 1,
               "{}: transformer_layer_config.num_hidden_layers is {}; an EAGLE-3 drafter has exactly 1 layer", source,
               layer.num_hidden_layers);
  DSPARK_CHECK(layer.model_type == ModelType::kLlama || layer.model_type == ModelType::kQwen3,
               "{}: transformer_layer_config.model_type '{}' is not supported for EAGLE-3 (llama, qwen3)", source,
               layer.model_type_name);
  DSPARK_CHECK(draft_vocab_size >= 1 && draft_vocab_size <= layer.vocab_size,
               "{}: field 'draft_vocab_size' is {}; it must be within 1..{} (the target vocabulary, vocab_size)", source,
               draft_vocab_size, layer.vocab_size);
  DSPARK_CHECK(target_hidden_size > 0, "{}: field 'target_hidden_size' must be positive, got {}", source,
               target_hidden_size);
  DSPARK_CHECK(aux_hidden_state_layer_ids.empty() || aux_hidden_state_layer_ids.size() == 3,
               "{}: field 'eagle_aux_hidden_state_layer_ids' has {} entries; EAGLE-3 fuses exactly 3 target layers",
               source, aux_hidden_state_layer_ids.size());
  std::set<int32_t> seen;
  for (int32_t id : aux_hidden_state_layer_ids) {
    DSPARK_CHECK(id >= 1, "{}: eagle_aux_hidden_state_layer_ids entry {} is not supported (id k = output of decoder "
                 "layer k-1; the embeddings, 0, are not captured)", source, id);
    DSPARK_CHECK(seen.insert(id).second, "{}: eagle_aux_hidden_state_layer_ids repeats {}", source, id);
  }
  DSPARK_CHECK(speculative_tokens >= 1, "{}: speculators_config speculative_tokens must be >= 1, got {}", source,
               speculative_tokens);
}

void Eagle3Config::validate_for_target(const ModelConfig& target, const std::string& source) const {
  DSPARK_CHECK(target_hidden_size == target.hidden_size,
               "{}: target_hidden_size is {} but the target's hidden_size is {}", source, target_hidden_size,
               target.hidden_size);
  DSPARK_CHECK(layer.vocab_size == target.vocab_size,
               "{}: the draft layer's vocab_size is {} but the target's vocab_size is {}", source, layer.vocab_size,
               target.vocab_size);
  DSPARK_CHECK(target.num_hidden_layers >= 4 || !aux_hidden_state_layer_ids.empty(),
               "{}: no eagle_aux_hidden_state_layer_ids, and the default (2, L/2, L-3) needs a target of at least 4 "
               "layers (it has {})", source, target.num_hidden_layers);
  for (int32_t id : aux_layer_ids(target.num_hidden_layers)) {
    DSPARK_CHECK(id >= 1 && id <= target.num_hidden_layers,
                 "{}: eagle_aux_hidden_state_layer_ids entry {} is beyond the target's depth: ids run 1..{} (id k is "
                 "the output of decoder layer k-1)",
                 source, id, target.num_hidden_layers);
  }
}

json Eagle3Config::to_json() const {
  validate("Eagle3Config::to_json");
  json j;
  j["architectures"] = json::array({std::string("Eagle3Speculator")});
  j["speculators_model_type"] = "eagle3";
  j["transformer_layer_config"] = layer.to_json();
  j["draft_vocab_size"] = draft_vocab_size;
  j["target_hidden_size"] = target_hidden_size;
  if (!aux_hidden_state_layer_ids.empty()) j["eagle_aux_hidden_state_layer_ids"] = aux_hidden_state_layer_ids;
  j["norm_before_residual"] = norm_before_residual;
  if (!quantization.empty()) j["quantization"] = quantization;
  j["speculators_config"] = {
      {"algorithm", "eagle3"},
      {"proposal_methods", json::array({{{"proposal_type", "greedy"}, {"speculative_tokens", speculative_tokens}}})},
      {"default_proposal_method", "greedy"},
      {"verifier", {{"name_or_path", verifier_name_or_path}, {"architectures", verifier_architectures}}}};
  return j;
}

std::vector<Eagle3Tensor> eagle3_tensors(const Eagle3Config& c) {
  const ModelConfig& l = c.layer;
  const int64_t h = l.hidden_size, q = l.num_attention_heads * l.head_dim, kv = l.num_key_value_heads * l.head_dim;
  const std::string p = c.layer_prefix();
  std::vector<Eagle3Tensor> t = {
      {"fc.weight", {h, 3 * c.target_hidden_size}},
      {p + "input_layernorm.weight", {h}},
      {p + "hidden_norm.weight", {h}},
      {p + "post_attention_layernorm.weight", {h}},
      {p + "self_attn.q_proj.weight", {q, 2 * h}},
      {p + "self_attn.k_proj.weight", {kv, 2 * h}},
      {p + "self_attn.v_proj.weight", {kv, 2 * h}},
      {p + "self_attn.o_proj.weight", {h, q}},
      {p + "mlp.gate_proj.weight", {l.intermediate_size, h}},
      {p + "mlp.up_proj.weight", {l.intermediate_size, h}},
      {p + "mlp.down_proj.weight", {h, l.intermediate_size}},
      {"norm.weight", {h}},
      {"lm_head.weight", {c.draft_vocab_size, h}},
      {"embed_tokens.weight", {l.vocab_size, h}, /*optional=*/true},
  };
  if (l.attention_bias) {
    t.push_back({p + "self_attn.q_proj.bias", {q}});
    t.push_back({p + "self_attn.k_proj.bias", {kv}});
    t.push_back({p + "self_attn.v_proj.bias", {kv}});
  }
  if (l.qk_norm) {
    t.push_back({p + "self_attn.q_norm.weight", {l.head_dim}});
    t.push_back({p + "self_attn.k_norm.weight", {l.head_dim}});
  }
  return t;
}

bool is_eagle3_directory(const std::filesystem::path& dir) {
  const std::filesystem::path file = dir / "config.json";
  if (!std::filesystem::is_regular_file(file)) return false;
  std::ifstream in(file);
  const json root = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!root.is_object()) return false;
  if (const auto it = root.find("speculators_model_type"); it != root.end()) return *it == "eagle3";
  const auto arch = root.find("architectures");
  if (arch == root.end() || !arch->is_array() || arch->empty() || !arch->front().is_string()) return false;
  return is_one_of(arch->front().get<std::string>(), kOriginalArchitectures);
}

}  // namespace dspark
