#include "loader/config.h"

#include <unistd.h>

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/check.h"

namespace dspark {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

constexpr const char* kSource = "/models/x/config.json";

json minimal(const std::string& type) {
  return {{"model_type", type},          {"vocab_size", 1000},
          {"hidden_size", 256},          {"intermediate_size", 688},
          {"num_hidden_layers", 4},      {"num_attention_heads", 8}};
}

ModelConfig parse(const json& j) { return ModelConfig::from_json(j, kSource); }

// Expects an Error naming the source file and containing every piece.
void expect_error(const json& j, std::initializer_list<std::string> pieces) {
  try {
    parse(j);
    ADD_FAILURE() << "no Error for " << j.dump();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(kSource));
    for (const std::string& piece : pieces) EXPECT_THAT(e.what(), HasSubstr(piece));
  }
}

void expect_round_trip(const ModelConfig& c) {
  const json j = c.to_json();
  EXPECT_EQ(ModelConfig::from_json(j, "round trip"), c) << j.dump(2);
  // And through text, as a file would hold it.
  EXPECT_EQ(ModelConfig::from_json(json::parse(j.dump()), "round trip"), c);
}

TEST(ModelConfig, LlamaDefaults) {
  const ModelConfig c = parse(minimal("llama"));
  EXPECT_EQ(c.model_type, ModelType::kLlama);
  EXPECT_EQ(c.model_type_name, "llama");
  EXPECT_EQ(c.vocab_size, 1000);
  EXPECT_EQ(c.num_key_value_heads, 8);
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_EQ(c.max_position_embeddings, 2048);
  EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-6f);
  EXPECT_FLOAT_EQ(c.rope_theta, 10000.0f);
  EXPECT_EQ(c.rope_scaling.kind, RopeScaling::Kind::kNone);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.attention_output_bias);
  EXPECT_FALSE(c.mlp_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.bos_token_id, -1);
  EXPECT_EQ(c.eos_token_id, -1);
  EXPECT_EQ(c.torch_dtype, "float32");
  EXPECT_EQ(c.q_size(), 256);
  EXPECT_EQ(c.kv_size(), 256);
  expect_round_trip(c);
}

TEST(ModelConfig, LlamaBiasesAndTokenIds) {
  json j = minimal("llama");
  j["attention_bias"] = true;
  j["mlp_bias"] = true;
  j["num_key_value_heads"] = 2;
  j["bos_token_id"] = 128000;
  j["eos_token_id"] = {128001, 128008, 128009};
  j["torch_dtype"] = "bfloat16";
  const ModelConfig c = parse(j);
  EXPECT_TRUE(c.attention_bias);
  EXPECT_TRUE(c.attention_output_bias);
  EXPECT_TRUE(c.mlp_bias);
  EXPECT_EQ(c.kv_size(), 64);
  EXPECT_EQ(c.bos_token_id, 128000);
  EXPECT_EQ(c.eos_token_id, 128001);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  expect_round_trip(c);

  j["bos_token_id"] = nullptr;
  j["eos_token_id"] = json::array();
  const ModelConfig none = parse(j);
  EXPECT_EQ(none.bos_token_id, -1);
  EXPECT_EQ(none.eos_token_id, -1);
}

TEST(ModelConfig, Llama3RopeScaling) {
  json j = minimal("llama");
  j["rope_theta"] = 500000.0;
  j["max_position_embeddings"] = 131072;
  j["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  ModelConfig c = parse(j);
  EXPECT_EQ(c.rope_scaling.kind, RopeScaling::Kind::kLlama3);
  EXPECT_EQ(c.rope_scaling.factor, 8.0f);
  EXPECT_EQ(c.rope_scaling.low_freq_factor, 1.0f);
  EXPECT_EQ(c.rope_scaling.high_freq_factor, 4.0f);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_EQ(c.rope_theta, 500000.0f);
  expect_round_trip(c);
  const json written = c.to_json();
  EXPECT_EQ(written["rope_scaling"]["rope_type"], "llama3");
  EXPECT_EQ(written["architectures"], json::array({"LlamaForCausalLM"}));

  // Older configs spell it "type".
  j["rope_scaling"].erase("rope_type");
  j["rope_scaling"]["type"] = "llama3";
  EXPECT_EQ(parse(j).rope_scaling, c.rope_scaling);

  // "default" means no scaling.
  j["rope_scaling"] = {{"rope_type", "default"}};
  EXPECT_EQ(parse(j).rope_scaling.kind, RopeScaling::Kind::kNone);
}

TEST(ModelConfig, RopeParametersOfNewerTransformers) {
  json j = minimal("qwen3");
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1000000.0}};
  const ModelConfig c = parse(j);
  EXPECT_EQ(c.rope_theta, 1000000.0f);
  EXPECT_EQ(c.rope_scaling.kind, RopeScaling::Kind::kNone);
  j["rope_parameters"] = {{"rope_type", "yarn"}, {"rope_theta", 1000000.0}, {"factor", 4.0}};
  EXPECT_EQ(parse(j).rope_scaling.kind, RopeScaling::Kind::kYarn);
  j["rope_parameters"] = {{"rope_type", "longrope"}, {"rope_theta", 1000000.0}, {"factor", 4.0}};
  expect_error(j, {"rope_parameters", "'longrope'", "not supported"});
}

TEST(ModelConfig, MistralWithFullWindowAndOwnHeadDim) {
  // Mistral-Nemo style: head_dim 128 while hidden / heads = 160.
  json j = minimal("mistral");
  j["hidden_size"] = 5120;
  j["num_attention_heads"] = 32;
  j["num_key_value_heads"] = 8;
  j["head_dim"] = 128;
  j["max_position_embeddings"] = 1024000;
  j["sliding_window"] = nullptr;
  ModelConfig c = parse(j);
  EXPECT_EQ(c.model_type, ModelType::kMistral);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.q_size(), 4096);
  EXPECT_FALSE(c.attention_bias);
  expect_round_trip(c);
  EXPECT_EQ(c.to_json()["architectures"], json::array({"MistralForCausalLM"}));

  j["sliding_window"] = 1024000;  // a window as long as the context changes nothing
  EXPECT_EQ(parse(j), c);
  j.erase("sliding_window");
  EXPECT_EQ(parse(j), c);
}

TEST(ModelConfig, Qwen2HasQkvBiasButNoOutputBias) {
  json j = minimal("qwen2");
  j["num_key_value_heads"] = 2;
  j["tie_word_embeddings"] = true;
  j["sliding_window"] = 4096;  // ignored: use_sliding_window is false
  j["use_sliding_window"] = false;
  j["eos_token_id"] = 151643;
  const ModelConfig c = parse(j);
  EXPECT_EQ(c.model_type, ModelType::kQwen2);
  EXPECT_TRUE(c.attention_bias);
  EXPECT_FALSE(c.attention_output_bias);
  EXPECT_FALSE(c.mlp_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.max_position_embeddings, 32768);
  EXPECT_EQ(c.eos_token_id, 151643);
  expect_round_trip(c);
  EXPECT_EQ(c.to_json()["architectures"], json::array({"Qwen2ForCausalLM"}));
  // The file cannot switch the biases off.
  j["attention_bias"] = false;
  EXPECT_TRUE(parse(j).attention_bias);
}

TEST(ModelConfig, Qwen3HasQkNormAndDecoupledHeadDim) {
  // Qwen3-0.6B: hidden 1024, 16 heads of 128.
  json j = minimal("qwen3");
  j["hidden_size"] = 1024;
  j["num_attention_heads"] = 16;
  j["num_key_value_heads"] = 8;
  j["head_dim"] = 128;
  j["rope_theta"] = 1000000;
  j["attention_bias"] = false;
  ModelConfig c = parse(j);
  EXPECT_EQ(c.model_type, ModelType::kQwen3);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(c.q_size(), 2048);
  EXPECT_EQ(c.rope_theta, 1e6f);
  expect_round_trip(c);
  EXPECT_EQ(c.to_json()["architectures"], json::array({"Qwen3ForCausalLM"}));
  j["attention_bias"] = true;
  c = parse(j);
  EXPECT_TRUE(c.attention_bias);
  EXPECT_TRUE(c.attention_output_bias);
  expect_round_trip(c);
}

TEST(ModelConfig, Stories260KFromSharedData) {
  const fs::path dir = fs::path(DSPARK_SHARED_DIR) / "data/models/stories260K-hf";
  const ModelConfig c = ModelConfig::from_file(dir);
  EXPECT_EQ(c, ModelConfig::from_file(dir / "config.json"));
  EXPECT_EQ(c.model_type, ModelType::kLlama);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 172);
  EXPECT_EQ(c.num_hidden_layers, 5);
  EXPECT_EQ(c.num_attention_heads, 8);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.max_position_embeddings, 512);
  EXPECT_EQ(c.rms_norm_eps, 1e-5f);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_id, 2);
  expect_round_trip(c);
  // Float fields are written in their shortest form.
  EXPECT_THAT(c.to_json().dump(), HasSubstr("\"rms_norm_eps\":1e-05"));
}

TEST(ModelConfig, FromFileErrorsNameTheFile) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("dspark_cfg_{}", ::getpid());
  fs::create_directories(dir);
  try {
    ModelConfig::from_file(dir);
    ADD_FAILURE() << "no Error for a directory without config.json";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr((dir / "config.json").string()));
  }
  std::ofstream(dir / "config.json") << R"({"model_type": "llama",)";
  try {
    ModelConfig::from_file(dir);
    ADD_FAILURE() << "no Error for invalid JSON";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr((dir / "config.json").string()));
    EXPECT_THAT(e.what(), HasSubstr("invalid JSON"));
  }
  fs::remove_all(dir);
}

TEST(ModelConfig, RejectsUnknownModelType) {
  expect_error(minimal("gpt2"), {"'gpt2'", "llama, mistral, qwen2, qwen3"});
  json j = minimal("llama");
  j.erase("model_type");
  expect_error(j, {"model_type"});
}

TEST(ModelConfig, RejectsWrongFieldTypes) {
  json j = minimal("llama");
  j["hidden_size"] = "512";
  expect_error(j, {"'hidden_size'", "integer", "\"512\""});
  j["hidden_size"] = 12.5;
  expect_error(j, {"'hidden_size'", "integer", "12.5"});
  j = minimal("llama");
  j["tie_word_embeddings"] = "true";
  expect_error(j, {"'tie_word_embeddings'", "true or false"});
  j = minimal("llama");
  j["rope_theta"] = "1e4";
  expect_error(j, {"'rope_theta'", "number"});
  j = minimal("llama");
  j["eos_token_id"] = "2";
  expect_error(j, {"'eos_token_id'", "integer"});
  j = minimal("llama");
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", "8"}};
  expect_error(j, {"'rope_scaling.factor'", "number"});
  expect_error(json::array({1, 2}), {"JSON object"});
}

TEST(ModelConfig, RejectsMissingAndNonPositiveSizes) {
  json j = minimal("llama");
  j.erase("vocab_size");
  expect_error(j, {"'vocab_size'", "missing"});
  j = minimal("llama");
  j["num_hidden_layers"] = 0;
  expect_error(j, {"'num_hidden_layers'", "positive"});
  j = minimal("llama");
  j["head_dim"] = -8;
  expect_error(j, {"'head_dim'", "positive"});
  j = minimal("llama");
  j["rms_norm_eps"] = 0;
  expect_error(j, {"rms_norm_eps"});
}

TEST(ModelConfig, RejectsInconsistentHeads) {
  json j = minimal("llama");
  j["num_key_value_heads"] = 3;
  expect_error(j, {"num_attention_heads 8", "num_key_value_heads 3", "divisible"});
  j = minimal("llama");
  j["num_attention_heads"] = 6;  // 256 / 6 is not whole and no head_dim says otherwise
  expect_error(j, {"hidden_size 256", "num_attention_heads 6"});
  j["head_dim"] = 48;  // an explicit head_dim makes it valid
  EXPECT_EQ(parse(j).q_size(), 288);
}

TEST(ModelConfig, RejectsUnsupportedRopeTypes) {
  for (const char* type : {"longrope", "ntk", "mrope"}) {
    json j = minimal("qwen2");
    j["rope_scaling"] = {{"type", type}, {"factor", 4.0}};
    expect_error(j, {std::string("'") + type + "'", "rope_scaling", "not supported"});
  }
  json j = minimal("llama");
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
  expect_error(j, {"rope_scaling.low_freq_factor", "missing"});
}

TEST(ModelConfig, LinearDynamicAndYarnRopeScalingRoundTrip) {
  json j = minimal("qwen3");
  j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.5}};
  ModelConfig c = parse(j);
  EXPECT_EQ(c.rope_scaling.kind, RopeScaling::Kind::kLinear);
  EXPECT_EQ(c.rope_scaling.factor, 2.5);
  expect_round_trip(c);
  EXPECT_EQ(c.to_json()["rope_scaling"]["rope_type"], "linear");

  j["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};
  c = parse(j);
  EXPECT_EQ(c.rope_scaling.kind, RopeScaling::Kind::kDynamic);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 0);  // absent: max_position_embeddings
  expect_round_trip(c);
  j["rope_scaling"]["original_max_position_embeddings"] = 4096;
  c = parse(j);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 4096);
  expect_round_trip(c);

  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
  c = parse(j);
  EXPECT_EQ(c.rope_scaling.kind, RopeScaling::Kind::kYarn);
  EXPECT_EQ(c.rope_scaling.beta_fast, 32.0);
  EXPECT_EQ(c.rope_scaling.beta_slow, 1.0);
  EXPECT_TRUE(c.rope_scaling.truncate);
  EXPECT_EQ(c.rope_scaling.attention_factor, 0.0);  // derived from factor
  expect_round_trip(c);
  // transformers reads `beta_fast or 32`: 0 is the default.
  j["rope_scaling"]["beta_fast"] = 0;
  EXPECT_EQ(parse(j).rope_scaling, c.rope_scaling);
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 40.0},          {"beta_fast", 16.0},
                       {"beta_slow", 2.0},    {"mscale", 1.0},           {"mscale_all_dim", 0.707},
                       {"truncate", false},   {"attention_factor", 1.2}};
  c = parse(j);
  EXPECT_EQ(c.rope_scaling.beta_fast, 16.0);
  EXPECT_EQ(c.rope_scaling.mscale_all_dim, 0.707);
  EXPECT_FALSE(c.rope_scaling.truncate);
  EXPECT_EQ(c.rope_scaling.attention_factor, 1.2);
  expect_round_trip(c);
}

TEST(ModelConfig, RejectsBadRopeScalingFields) {
  auto with = [](json scaling) {
    json j = minimal("qwen2");
    j["rope_scaling"] = std::move(scaling);
    return j;
  };
  for (const char* type : {"linear", "dynamic", "yarn"}) {
    expect_error(with({{"rope_type", type}}), {"'rope_scaling.factor'", "missing"});
    expect_error(with({{"rope_type", type}, {"factor", 0.0}}), {"'rope_scaling.factor'", "positive", "0"});
    expect_error(with({{"rope_type", type}, {"factor", -2.0}}), {"'rope_scaling.factor'", "positive"});
    expect_error(with({{"rope_type", type}, {"factor", "4"}}), {"'rope_scaling.factor'", "number"});
  }
  expect_error(with({{"rope_type", "yarn"}, {"factor", 4.0}, {"attention_factor", 0.0}}),
               {"'rope_scaling.attention_factor'", "positive"});
  expect_error(with({{"rope_type", "yarn"}, {"factor", 4.0}, {"beta_slow", -1.0}}),
               {"'rope_scaling.beta_slow'", "positive"});
  expect_error(with({{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 0}}),
               {"'rope_scaling.original_max_position_embeddings'", "positive"});
  expect_error(with({{"rope_type", "yarn"}, {"factor", 4.0}, {"truncate", "yes"}}),
               {"'rope_scaling.truncate'"});
  expect_error(with({{"factor", 4.0}}), {"rope_scaling", "no 'rope_type'"});
  json j = with({{"rope_type", "dynamic"}, {"factor", 2.0}});
  j["head_dim"] = 2;
  expect_error(j, {"dynamic", "head_dim"});
  j = minimal("qwen2");
  j["rope_parameters"] = {{"rope_type", "linear"}, {"factor", 0.0}};
  expect_error(j, {"'rope_parameters.factor'", "positive"});
}

TEST(ModelConfig, SlidingWindowPerLayer) {
  // Mistral: every layer.
  json j = minimal("mistral");
  j["max_position_embeddings"] = 32768;
  j["sliding_window"] = 4096;
  ModelConfig c = parse(j);
  EXPECT_EQ(c.sliding_window, 4096);
  for (int64_t l = 0; l < 4; ++l) EXPECT_EQ(c.attention_window(l), 4096) << l;
  expect_round_trip(c);
  EXPECT_EQ(c.to_json()["sliding_window"], 4096);

  // Qwen: with use_sliding_window, the layers from max_window_layers on.
  j = minimal("qwen2");
  j["use_sliding_window"] = true;
  j["sliding_window"] = 4096;
  j["max_window_layers"] = 2;
  c = parse(j);
  EXPECT_EQ(c.sliding_window, 4096);
  EXPECT_EQ(c.sliding_layers, (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(c.attention_window(1), 0);
  EXPECT_EQ(c.attention_window(2), 4096);
  expect_round_trip(c);
  j["max_window_layers"] = 4;  // no layer slides
  EXPECT_EQ(parse(j).sliding_window, 0);
  j.erase("max_window_layers");  // transformers' default 28: none of 4 layers
  EXPECT_EQ(parse(j).sliding_window, 0);
  // layer_types decides when present.
  j["layer_types"] = {"sliding_attention", "full_attention", "sliding_attention", "full_attention"};
  c = parse(j);
  EXPECT_EQ(c.sliding_layers, (std::vector<bool>{true, false, true, false}));
  expect_round_trip(c);
  j["use_sliding_window"] = false;  // no window: sliding_attention layers are full
  EXPECT_EQ(parse(j).sliding_window, 0);

  j = minimal("qwen3");
  j["use_sliding_window"] = true;
  j["sliding_window"] = 128;
  j["max_window_layers"] = 0;
  c = parse(j);
  EXPECT_EQ(c.sliding_layers, (std::vector<bool>(4, true)));
  expect_round_trip(c);

  // Llama has no window whatever the file says.
  j = minimal("llama");
  j["sliding_window"] = 16;
  EXPECT_EQ(parse(j).sliding_window, 0);
}

TEST(ModelConfig, RejectsBadSlidingWindowFields) {
  json j = minimal("mistral");
  j["sliding_window"] = -5;
  expect_error(j, {"'sliding_window'", "-5"});
  j["sliding_window"] = "4096";
  expect_error(j, {"'sliding_window'", "integer"});
  j = minimal("qwen2");
  j["use_sliding_window"] = true;
  j["sliding_window"] = 64;
  j["layer_types"] = {"sliding_attention", "full_attention"};
  expect_error(j, {"layer_types", "2 entries", "num_hidden_layers 4"});
  j["layer_types"] = {"sliding_attention", "full_attention", "chunked_attention", "full_attention"};
  expect_error(j, {"layer_types[2]", "chunked_attention"});
  j["layer_types"] = "sliding_attention";
  expect_error(j, {"'layer_types'", "list"});
  // A windowed layer pattern mistral cannot express is refused by to_json.
  ModelConfig c = parse(minimal("mistral"));
  c.sliding_window = 8;
  c.sliding_layers = {true, false, true, true};
  EXPECT_THROW(c.to_json(), Error);
}

TEST(ModelConfig, RejectsOtherActivations) {
  json j = minimal("llama");
  j["hidden_act"] = "gelu";
  expect_error(j, {"'gelu'", "silu"});
}

TEST(ModelConfig, ToJsonRejectsFlagsTheTypeCannotExpress) {
  ModelConfig c = parse(minimal("llama"));
  c.qk_norm = true;
  EXPECT_THROW(c.to_json(), Error);
  c = parse(minimal("mistral"));
  c.attention_bias = true;
  EXPECT_THROW(c.to_json(), Error);
  c = parse(minimal("llama"));
  c.attention_bias = true;  // without o bias: no llama config says that
  EXPECT_THROW(c.to_json(), Error);
}

}  // namespace
}  // namespace dspark
