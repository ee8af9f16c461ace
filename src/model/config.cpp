#include "model/config.h"

#include <optional>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "model/json_fields.h"

namespace dspark {

using nlohmann::json;

namespace {

constexpr std::string_view kSupportedTypes = "llama, mistral, qwen2, qwen3";

// Token ids of a field: an int, a list of ints (empty list = none), or null/absent.
std::vector<int64_t> get_token_ids(const JsonFields& fields, std::string_view key) {
  const json* v = fields.find(key);
  if (!v) return {};
  std::vector<int64_t> ids;
  if (v->is_array()) {
    for (const json& item : *v) {
      DSPARK_CHECK(item.is_number_integer(),
                   "{}: field '{}' must be an integer or a list of integers, got {}",
                   fields.source(), fields.name(key), describe_json(*v));
      ids.push_back(fields.as_int(item, key));
    }
  } else {
    DSPARK_CHECK(v->is_number_integer(),
                 "{}: field '{}' must be an integer or a list of integers, got {}",
                 fields.source(), fields.name(key), describe_json(*v));
    ids.push_back(fields.as_int(*v, key));
  }
  for (int64_t id : ids)
    DSPARK_CHECK(id >= 0, "{}: field '{}' holds a negative token id {}", fields.source(),
                 fields.name(key), id);
  return ids;
}

ModelType parse_model_type(const JsonFields& fields, const std::string& source) {
  const std::optional<std::string> name = fields.get_string("model_type");
  DSPARK_CHECK(name, "{}: missing field 'model_type' (supported: {})", source, kSupportedTypes);
  if (*name == "llama") return ModelType::kLlama;
  if (*name == "mistral") return ModelType::kMistral;
  if (*name == "qwen2") return ModelType::kQwen2;
  if (*name == "qwen3") return ModelType::kQwen3;
  DSPARK_FAIL("{}: unsupported model_type '{}' (supported: {})", source, *name, kSupportedTypes);
}

// One rope_scaling object ({rope_type|type, ...}); `where` is its field name.
RopeScaling parse_rope_scaling(const json& object, const std::string& source,
                               const std::string& where) {
  DSPARK_CHECK(object.is_object(), "{}: field '{}' must be an object or null, got {}", source,
               where, describe_json(object));
  const JsonFields fields(object, source, where + ".");
  std::optional<std::string> type = fields.get_string("rope_type");
  if (!type) type = fields.get_string("type");
  DSPARK_CHECK(type, "{}: field '{}' has no 'rope_type' (supported: default, llama3)", source,
               where);
  RopeScaling rope;
  if (*type == "default") return rope;
  DSPARK_CHECK(*type == "llama3",
               "{}: field '{}' has rope type '{}', which is not supported (supported: default, "
               "llama3)",
               source, where, *type);
  rope.kind = RopeScaling::Kind::kLlama3;
  rope.factor = static_cast<float>(fields.get_number("factor"));
  rope.low_freq_factor = static_cast<float>(fields.get_number("low_freq_factor"));
  rope.high_freq_factor = static_cast<float>(fields.get_number("high_freq_factor"));
  rope.original_max_position_embeddings = fields.get_int("original_max_position_embeddings");
  DSPARK_CHECK(rope.factor > 0 && rope.low_freq_factor > 0, "{}: '{}' factors must be positive",
               source, where);
  // The llama3 ramp divides by (high - low): equal or inverted factors have no meaning.
  DSPARK_CHECK(rope.high_freq_factor > rope.low_freq_factor,
               "{}: '{}.high_freq_factor' ({}) must exceed low_freq_factor ({})", source, where,
               rope.high_freq_factor, rope.low_freq_factor);
  fields.require_positive("original_max_position_embeddings",
                          rope.original_max_position_embeddings);
  return rope;
}

// Sliding-window attention is not implemented; accept only configs where no layer uses it.
void check_sliding_window(const ModelConfig& config, const JsonFields& fields,
                          const std::string& source) {
  const int64_t window = fields.get_int("sliding_window", -1);
  bool used = window >= 0;
  if (config.model_type == ModelType::kQwen2 || config.model_type == ModelType::kQwen3) {
    // Qwen applies the window only with use_sliding_window, to layers >= max_window_layers.
    used = used && fields.get_bool("use_sliding_window", false) &&
           fields.get_int("max_window_layers", 28) < config.num_hidden_layers;
  } else if (config.model_type == ModelType::kLlama) {
    used = false;
  }
  DSPARK_CHECK(!used || window >= config.max_position_embeddings,
               "{}: sliding_window {} is smaller than max_position_embeddings {}; sliding-window "
               "attention is not supported",
               source, window, config.max_position_embeddings);
  if (const json* layer_types = fields.find("layer_types")) {
    DSPARK_CHECK(layer_types->is_array(), "{}: field 'layer_types' must be a list, got {}",
                 source, describe_json(*layer_types));
    for (const json& type : *layer_types) {
      DSPARK_CHECK(type == "full_attention" || (type == "sliding_attention" && !used),
                   "{}: layer_types contains {}; only full attention is supported", source,
                   type.dump());
    }
  }
}

std::string_view architecture_of(ModelType type) {
  switch (type) {
    case ModelType::kLlama: return "LlamaForCausalLM";
    case ModelType::kMistral: return "MistralForCausalLM";
    case ModelType::kQwen2: return "Qwen2ForCausalLM";
    case ModelType::kQwen3: return "Qwen3ForCausalLM";
  }
  return "?";
}

}  // namespace

std::string_view model_type_to_string(ModelType type) {
  switch (type) {
    case ModelType::kLlama: return "llama";
    case ModelType::kMistral: return "mistral";
    case ModelType::kQwen2: return "qwen2";
    case ModelType::kQwen3: return "qwen3";
  }
  return "?";
}

ModelConfig ModelConfig::from_json(const json& root, const std::string& source) {
  DSPARK_CHECK(root.is_object(), "{}: config must be a JSON object, got {}", source,
               describe_json(root));
  const JsonFields fields(root, source);
  ModelConfig c;
  c.model_type = parse_model_type(fields, source);
  c.model_type_name = std::string(model_type_to_string(c.model_type));

  c.vocab_size = fields.get_int("vocab_size");
  c.hidden_size = fields.get_int("hidden_size");
  c.intermediate_size = fields.get_int("intermediate_size");
  c.num_hidden_layers = fields.get_int("num_hidden_layers");
  c.num_attention_heads = fields.get_int("num_attention_heads");
  for (auto [key, value] : {std::pair{"vocab_size", c.vocab_size},
                            {"hidden_size", c.hidden_size},
                            {"intermediate_size", c.intermediate_size},
                            {"num_hidden_layers", c.num_hidden_layers},
                            {"num_attention_heads", c.num_attention_heads}}) {
    fields.require_positive(key, value);
  }
  c.num_key_value_heads = fields.get_int("num_key_value_heads", c.num_attention_heads);
  fields.require_positive("num_key_value_heads", c.num_key_value_heads);
  DSPARK_CHECK(c.num_attention_heads % c.num_key_value_heads == 0,
               "{}: num_attention_heads {} is not divisible by num_key_value_heads {}", source,
               c.num_attention_heads, c.num_key_value_heads);
  if (fields.has("head_dim")) {
    c.head_dim = fields.get_int("head_dim");
    fields.require_positive("head_dim", c.head_dim);
  } else {
    DSPARK_CHECK(c.hidden_size % c.num_attention_heads == 0,
                 "{}: hidden_size {} is not divisible by num_attention_heads {} (and no head_dim "
                 "is given)",
                 source, c.hidden_size, c.num_attention_heads);
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  // Defaults are those of the transformers config class of each type.
  const int64_t default_max_positions = c.model_type == ModelType::kLlama     ? 2048
                                        : c.model_type == ModelType::kMistral ? 4096 * 32
                                                                              : 32768;
  c.max_position_embeddings = fields.get_int("max_position_embeddings", default_max_positions);
  fields.require_positive("max_position_embeddings", c.max_position_embeddings);

  c.rms_norm_eps = static_cast<float>(fields.get_number("rms_norm_eps", 1e-6));
  DSPARK_CHECK(c.rms_norm_eps > 0, "{}: field 'rms_norm_eps' must be positive, got {}", source,
               c.rms_norm_eps);

  // Newer transformers versions move rope_theta and the scaling into rope_parameters.
  const json* rope_parameters = fields.find("rope_parameters");
  double rope_theta = fields.get_number("rope_theta", 10000.0);
  if (rope_parameters) {
    DSPARK_CHECK(rope_parameters->is_object(),
                 "{}: field 'rope_parameters' must be an object, got {}", source,
                 describe_json(*rope_parameters));
    rope_theta = JsonFields(*rope_parameters, source, "rope_parameters.")
                     .get_number("rope_theta", rope_theta);
  }
  c.rope_theta = static_cast<float>(rope_theta);
  DSPARK_CHECK(c.rope_theta > 0, "{}: field 'rope_theta' must be positive, got {}", source,
               c.rope_theta);
  if (const json* scaling = fields.find("rope_scaling")) {
    c.rope_scaling = parse_rope_scaling(*scaling, source, "rope_scaling");
  } else if (rope_parameters) {
    c.rope_scaling = parse_rope_scaling(*rope_parameters, source, "rope_parameters");
  }

  const std::string act = fields.get_string("hidden_act").value_or("silu");
  DSPARK_CHECK(act == "silu", "{}: hidden_act '{}' is not supported (only silu)", source, act);

  c.tie_word_embeddings = fields.get_bool("tie_word_embeddings", false);
  // Weight formats dspark cannot compute are refused here rather than failing on a tensor.
  if (const json* quantization = fields.find("quantization_config")) {
    DSPARK_CHECK(quantization->is_object(), "{}: field 'quantization_config' must be an object, got {}", source,
                 describe_json(*quantization));
    const JsonFields q(*quantization, source, "quantization_config.");
    const std::string method = q.get_string("quant_method").value_or("");
    DSPARK_CHECK(method == "dspark_int8",
                 "{}: quantization_config.quant_method '{}' is not supported (dspark reads dspark_int8, "
                 "written by `dspark quantize`)",
                 source, method);
    DSPARK_CHECK(q.get_int("group_size", 32) == 32, "{}: quantization_config.group_size must be 32", source);
    c.int8_weights = true;
  }
  switch (c.model_type) {
    case ModelType::kLlama:
      c.attention_bias = c.attention_output_bias = fields.get_bool("attention_bias", false);
      c.mlp_bias = fields.get_bool("mlp_bias", false);
      break;
    case ModelType::kQwen3:
      c.attention_bias = c.attention_output_bias = fields.get_bool("attention_bias", false);
      c.qk_norm = true;
      break;
    case ModelType::kQwen2:
      c.attention_bias = true;
      break;
    case ModelType::kMistral:
      break;
  }
  check_sliding_window(c, fields, source);

  const std::vector<int64_t> bos = get_token_ids(fields, "bos_token_id");
  c.bos_token_id = bos.empty() ? -1 : bos.front();
  c.eos_token_ids = get_token_ids(fields, "eos_token_id");
  c.eos_token_id = c.eos_token_ids.empty() ? -1 : c.eos_token_ids.front();

  std::optional<std::string> dtype = fields.get_string("torch_dtype");
  if (!dtype) dtype = fields.get_string("dtype");
  if (dtype) c.torch_dtype = *dtype;
  return c;
}

ModelConfig ModelConfig::from_file(const std::filesystem::path& path) {
  const JsonFile file = read_json_config(path, "model config");
  return from_json(file.root, file.source);
}

json ModelConfig::to_json() const {
  const std::string_view type = model_type_to_string(model_type);
  const bool reads_attention_bias =
      model_type == ModelType::kLlama || model_type == ModelType::kQwen3;
  // Only combinations that from_json can produce for this type are writable.
  DSPARK_CHECK(qk_norm == (model_type == ModelType::kQwen3),
               "ModelConfig: qk_norm={} cannot be expressed for model_type {}", qk_norm, type);
  DSPARK_CHECK(!mlp_bias || model_type == ModelType::kLlama,
               "ModelConfig: mlp_bias cannot be expressed for model_type {}", type);
  if (reads_attention_bias) {
    DSPARK_CHECK(attention_bias == attention_output_bias,
                 "ModelConfig: model_type {} has bias on q/k/v and o together or not at all", type);
  } else {
    const bool qwen2 = model_type == ModelType::kQwen2;
    DSPARK_CHECK(attention_bias == qwen2 && !attention_output_bias,
                 "ModelConfig: attention biases of model_type {} are fixed (q/k/v bias: {}, o "
                 "bias: false)",
                 type, qwen2);
  }
  DSPARK_CHECK(eos_token_ids.empty() || eos_token_ids.front() == eos_token_id,
               "ModelConfig: eos_token_id {} is not the first of eos_token_ids", eos_token_id);

  json j;
  j["architectures"] = json::array({std::string(architecture_of(model_type))});
  j["model_type"] = std::string(type);
  j["vocab_size"] = vocab_size;
  j["hidden_size"] = hidden_size;
  j["intermediate_size"] = intermediate_size;
  j["num_hidden_layers"] = num_hidden_layers;
  j["num_attention_heads"] = num_attention_heads;
  j["num_key_value_heads"] = num_key_value_heads;
  j["head_dim"] = head_dim;
  j["max_position_embeddings"] = max_position_embeddings;
  j["rms_norm_eps"] = float_for_json(rms_norm_eps);
  j["rope_theta"] = float_for_json(rope_theta);
  if (rope_scaling.kind == RopeScaling::Kind::kLlama3) {
    j["rope_scaling"] = {
        {"rope_type", "llama3"},
        {"factor", float_for_json(rope_scaling.factor)},
        {"low_freq_factor", float_for_json(rope_scaling.low_freq_factor)},
        {"high_freq_factor", float_for_json(rope_scaling.high_freq_factor)},
        {"original_max_position_embeddings", rope_scaling.original_max_position_embeddings}};
  } else {
    j["rope_scaling"] = nullptr;
  }
  j["hidden_act"] = "silu";
  j["tie_word_embeddings"] = tie_word_embeddings;
  if (int8_weights) j["quantization_config"] = {{"quant_method", "dspark_int8"}, {"group_size", 32}};
  if (reads_attention_bias) j["attention_bias"] = attention_bias;
  if (model_type == ModelType::kLlama) j["mlp_bias"] = mlp_bias;
  if (model_type == ModelType::kMistral) j["sliding_window"] = nullptr;
  if (model_type == ModelType::kQwen2 || model_type == ModelType::kQwen3)
    j["use_sliding_window"] = false;
  j["bos_token_id"] = bos_token_id >= 0 ? json(bos_token_id) : json(nullptr);
  if (eos_token_ids.size() > 1) j["eos_token_id"] = eos_token_ids;
  else j["eos_token_id"] = eos_token_id >= 0 ? json(eos_token_id) : json(nullptr);
  j["torch_dtype"] = torch_dtype;
  return j;
}

}  // namespace dspark
