#include "loader/config.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "loader/json_fields.h"

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

constexpr std::string_view kSupportedRopeTypes = "default, linear, dynamic, yarn, llama3";

// `where.key` as a positive finite number; `fallback` when absent.
double positive_number(const JsonFields& fields, std::string_view key, std::optional<double> fallback) {
  const double value = fallback ? fields.get_number(key, *fallback) : fields.get_number(key);
  DSPARK_CHECK(value > 0 && std::isfinite(value), "{}: field '{}' must be a positive number, got {}",
               fields.source(), fields.name(key), value);
  return value;
}

// One rope_scaling object ({rope_type|type, ...}); `where` is its field name.
RopeScaling parse_rope_scaling(const json& object, const std::string& source,
                               const std::string& where) {
  DSPARK_CHECK(object.is_object(), "{}: field '{}' must be an object or null, got {}", source,
               where, describe_json(object));
  const JsonFields fields(object, source, where + ".");
  std::optional<std::string> type = fields.get_string("rope_type");
  if (!type) type = fields.get_string("type");
  DSPARK_CHECK(type, "{}: field '{}' has no 'rope_type' (supported: {})", source, where,
               kSupportedRopeTypes);
  RopeScaling rope;
  if (*type == "default") return rope;
  if (*type == "linear" || *type == "dynamic") {
    rope.kind = *type == "linear" ? RopeScaling::Kind::kLinear : RopeScaling::Kind::kDynamic;
    rope.factor = positive_number(fields, "factor", std::nullopt);
    rope.original_max_position_embeddings = 0;
    if (rope.kind == RopeScaling::Kind::kDynamic && fields.has("original_max_position_embeddings")) {
      rope.original_max_position_embeddings = fields.get_int("original_max_position_embeddings");
      fields.require_positive("original_max_position_embeddings", rope.original_max_position_embeddings);
    }
    return rope;
  }
  if (*type == "yarn") {
    rope.kind = RopeScaling::Kind::kYarn;
    rope.factor = positive_number(fields, "factor", std::nullopt);
    rope.original_max_position_embeddings = 0;
    if (fields.has("original_max_position_embeddings")) {
      rope.original_max_position_embeddings = fields.get_int("original_max_position_embeddings");
      fields.require_positive("original_max_position_embeddings", rope.original_max_position_embeddings);
    }
    // transformers reads `beta_fast or 32` and `mscale and mscale_all_dim`: 0 means absent.
    if (fields.get_number("beta_fast", 0.0) != 0.0) rope.beta_fast = positive_number(fields, "beta_fast", std::nullopt);
    if (fields.get_number("beta_slow", 0.0) != 0.0) rope.beta_slow = positive_number(fields, "beta_slow", std::nullopt);
    rope.mscale = fields.get_number("mscale", 0.0);
    rope.mscale_all_dim = fields.get_number("mscale_all_dim", 0.0);
    if (fields.has("attention_factor"))
      rope.attention_factor = positive_number(fields, "attention_factor", std::nullopt);
    rope.truncate = fields.get_bool("truncate", true);
    return rope;
  }
  DSPARK_CHECK(*type == "llama3", "{}: field '{}' has rope type '{}', which is not supported (supported: {})",
               source, where, *type, kSupportedRopeTypes);
  rope.kind = RopeScaling::Kind::kLlama3;
  rope.factor = fields.get_number("factor");
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

// Sliding-window attention, as the transformers config class of each type resolves it:
// mistral: `sliding_window` on every layer (null = none); qwen2/qwen3: only with
// use_sliding_window, on the layers layer_types calls "sliding_attention" (default: layers
// >= max_window_layers); llama has none. Sets config.sliding_window / sliding_layers.
void parse_sliding_window(ModelConfig& config, const JsonFields& fields, const std::string& source) {
  const bool qwen = config.model_type == ModelType::kQwen2 || config.model_type == ModelType::kQwen3;
  int64_t window = 0;  // LlamaConfig has no window
  if (config.model_type != ModelType::kLlama) {
    window = fields.get_int("sliding_window", 0);
    DSPARK_CHECK(window >= 0, "{}: field 'sliding_window' must be positive or null, got {}", source, window);
  }
  if (qwen && !fields.get_bool("use_sliding_window", false)) window = 0;
  const int64_t num_layers = config.num_hidden_layers;
  std::vector<bool> sliding(static_cast<size_t>(num_layers), window > 0);
  if (qwen) {
    const int64_t max_window_layers = fields.get_int("max_window_layers", 28);
    for (int64_t l = 0; l < num_layers; ++l) sliding[static_cast<size_t>(l)] = window > 0 && l >= max_window_layers;
  }
  if (const json* layer_types = fields.find("layer_types")) {
    DSPARK_CHECK(layer_types->is_array(), "{}: field 'layer_types' must be a list, got {}",
                 source, describe_json(*layer_types));
    DSPARK_CHECK(static_cast<int64_t>(layer_types->size()) == num_layers,
                 "{}: field 'layer_types' has {} entries for num_hidden_layers {}", source,
                 layer_types->size(), num_layers);
    for (int64_t l = 0; l < num_layers; ++l) {
      const json& type = (*layer_types)[static_cast<size_t>(l)];
      DSPARK_CHECK(type == "full_attention" || type == "sliding_attention",
                   "{}: layer_types[{}] is {}; supported: \"full_attention\", \"sliding_attention\"",
                   source, l, type.dump());
      // Without a window (llama, qwen without use_sliding_window) every layer is full.
      sliding[static_cast<size_t>(l)] = window > 0 && type == "sliding_attention";
    }
  }
  // A window covering the whole context changes no mask: store it as none.
  const bool any = std::find(sliding.begin(), sliding.end(), true) != sliding.end();
  if (window >= config.max_position_embeddings || !any) return;
  config.sliding_window = window;
  config.sliding_layers = std::move(sliding);
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

json rope_scaling_to_json(const RopeScaling& r) {
  using Kind = RopeScaling::Kind;
  switch (r.kind) {
    case Kind::kNone:
      return nullptr;
    case Kind::kLinear:
      return {{"rope_type", "linear"}, {"factor", r.factor}};
    case Kind::kDynamic: {
      json j = {{"rope_type", "dynamic"}, {"factor", r.factor}};
      if (r.original_max_position_embeddings > 0)
        j["original_max_position_embeddings"] = r.original_max_position_embeddings;
      return j;
    }
    case Kind::kYarn: {
      json j = {{"rope_type", "yarn"},   {"factor", r.factor},       {"beta_fast", r.beta_fast},
                {"beta_slow", r.beta_slow}, {"truncate", r.truncate}};
      if (r.original_max_position_embeddings > 0)
        j["original_max_position_embeddings"] = r.original_max_position_embeddings;
      if (r.mscale != 0.0) j["mscale"] = r.mscale;
      if (r.mscale_all_dim != 0.0) j["mscale_all_dim"] = r.mscale_all_dim;
      if (r.attention_factor != 0.0) j["attention_factor"] = r.attention_factor;
      return j;
    }
    case Kind::kLlama3:
      return {{"rope_type", "llama3"},
              {"factor", r.factor},
              {"low_freq_factor", float_for_json(r.low_freq_factor)},
              {"high_freq_factor", float_for_json(r.high_freq_factor)},
              {"original_max_position_embeddings", r.original_max_position_embeddings}};
  }
  return nullptr;
}

// The sliding-window fields parse_sliding_window reads back as c.sliding_window/layers.
void write_sliding_window(const ModelConfig& c, json& j) {
  const bool windowed = c.sliding_window > 0;
  switch (c.model_type) {
    case ModelType::kLlama:
      DSPARK_CHECK(!windowed, "ModelConfig: sliding_window cannot be expressed for model_type llama");
      break;
    case ModelType::kMistral:
      DSPARK_CHECK(!windowed || std::find(c.sliding_layers.begin(), c.sliding_layers.end(), false) ==
                                    c.sliding_layers.end(),
                   "ModelConfig: mistral applies sliding_window to every layer");
      j["sliding_window"] = windowed ? json(c.sliding_window) : json(nullptr);
      break;
    case ModelType::kQwen2:
    case ModelType::kQwen3:
      j["use_sliding_window"] = windowed;
      if (windowed) {
        j["sliding_window"] = c.sliding_window;
        json types = json::array();
        for (bool s : c.sliding_layers) types.push_back(s ? "sliding_attention" : "full_attention");
        j["layer_types"] = types;
      }
      break;
  }
  DSPARK_CHECK(!windowed || static_cast<int64_t>(c.sliding_layers.size()) == c.num_hidden_layers,
               "ModelConfig: sliding_layers has {} entries for {} layers", c.sliding_layers.size(),
               c.num_hidden_layers);
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
  // Dynamic NTK raises the base to dim / (dim - 2).
  DSPARK_CHECK(c.rope_scaling.kind != RopeScaling::Kind::kDynamic || c.head_dim > 2,
               "{}: dynamic rope_scaling needs head_dim > 2, got {}", source, c.head_dim);

  const std::string act = fields.get_string("hidden_act").value_or("silu");
  DSPARK_CHECK(act == "silu", "{}: hidden_act '{}' is not supported (only silu)", source, act);

  c.tie_word_embeddings = fields.get_bool("tie_word_embeddings", false);
  // Weight formats dspark cannot compute are refused here rather than failing on a tensor.
  if (const json* quantization = fields.find("quantization_config")) {
    DSPARK_CHECK(quantization->is_object(), "{}: field 'quantization_config' must be an object, got {}", source,
                 describe_json(*quantization));
    const JsonFields q(*quantization, source, "quantization_config.");
    const std::string method = q.get_string("quant_method").value_or("");
    DSPARK_CHECK(method == "dspark_int8" || method == "dspark_int4",
                 "{}: quantization_config.quant_method '{}' is not supported (dspark reads dspark_int8 and "
                 "dspark_int4, written by `dspark quantize`)",
                 source, method);
    DSPARK_CHECK(q.get_int("group_size", 32) == 32, "{}: quantization_config.group_size must be 32", source);
    c.stored_weight_bits = method == "dspark_int8" ? 8 : 4;
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
  parse_sliding_window(c, fields, source);

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
  j["rope_scaling"] = rope_scaling_to_json(rope_scaling);
  j["hidden_act"] = "silu";
  j["tie_word_embeddings"] = tie_word_embeddings;
  if (stored_weight_bits > 0) {
    j["quantization_config"] = {{"quant_method", stored_weight_bits == 8 ? "dspark_int8" : "dspark_int4"},
                                {"group_size", 32}};
  }
  if (reads_attention_bias) j["attention_bias"] = attention_bias;
  if (model_type == ModelType::kLlama) j["mlp_bias"] = mlp_bias;
  write_sliding_window(*this, j);
  j["bos_token_id"] = bos_token_id >= 0 ? json(bos_token_id) : json(nullptr);
  if (eos_token_ids.size() > 1) j["eos_token_id"] = eos_token_ids;
  else j["eos_token_id"] = eos_token_id >= 0 ? json(eos_token_id) : json(nullptr);
  j["torch_dtype"] = torch_dtype;
  return j;
}

}  // namespace dspark
