// DrafterConfig: parsing a speculators-layout config.json shaped like a published DSpark
// drafter, the layer-id convention, the writer round trip, and the errors (each names the
// field, and for target checks both values).
#include "spec/drafter_config.h"

#include <fstream>
#include <functional>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "spec/drafter_tensors.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

using nlohmann::json;

// A config like deepseek-ai/dspark_qwen3_4b_block7 exported to the speculators layout: the
// DeepSpec config's target_layer_ids [1, 9, 17, 25, 33] (output of decoder layer l) are
// written as speculators aux ids [2, 10, 18, 26, 34]. transformer_layer_config is a diff
// dict (fields equal to the Qwen3Config defaults may be absent).
json published_dspark() {
  return json::parse(R"({
    "architectures": ["DSparkDraftModel"],
    "speculators_model_type": "dspark",
    "transformer_layer_config": {
      "model_type": "qwen3", "vocab_size": 151936, "hidden_size": 2560, "intermediate_size": 9728,
      "num_hidden_layers": 5, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
      "max_position_embeddings": 40960, "rms_norm_eps": 1e-06, "rope_theta": 1000000, "tie_word_embeddings": true
    },
    "block_size": 7,
    "aux_hidden_state_layer_ids": [2, 10, 18, 26, 34],
    "mask_token_id": 151669,
    "target_hidden_size": 2560,
    "draft_vocab_size": 151936,
    "markov_rank": 256,
    "markov_head_type": "vanilla",
    "enable_confidence_head": true,
    "confidence_head_with_markov": true,
    "confidence_temperatures": [1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6],
    "speculators_config": {
      "algorithm": "dspark",
      "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 7}],
      "default_proposal_method": "greedy",
      "verifier": {"name_or_path": "Qwen/Qwen3-4B", "architectures": ["Qwen3ForCausalLM"]}
    }
  })");
}

ModelConfig qwen3_4b() {
  return ModelConfig::from_json(json::parse(R"({"model_type": "qwen3", "vocab_size": 151936, "hidden_size": 2560,
      "intermediate_size": 9728, "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
      "head_dim": 128, "max_position_embeddings": 40960, "tie_word_embeddings": true})"),
                                "qwen3-4b");
}

// The Error message of parsing `j`, or "" when it parses.
std::string parse_error(const json& j) {
  try {
    DrafterConfig::from_json(j, "drafter.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string target_error(const json& j, const ModelConfig& target) {
  try {
    DrafterConfig::from_json(j, "drafter.json").validate_for_target(target, "drafter.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DrafterConfig, ParsesPublishedDSparkShape) {
  const DrafterConfig c = DrafterConfig::from_json(published_dspark(), "drafter.json");
  EXPECT_EQ(c.kind, DrafterKind::kDSpark);
  EXPECT_EQ(c.layer.model_type, ModelType::kQwen3);
  EXPECT_TRUE(c.layer.qk_norm);
  EXPECT_EQ(c.layer.num_hidden_layers, 5);
  EXPECT_EQ(c.layer.rms_norm_eps, 1e-6f);
  EXPECT_EQ(c.block_size, 7);
  EXPECT_TRUE(c.sample_from_anchor);
  EXPECT_EQ(c.num_drafts(), 7);
  EXPECT_EQ(c.speculative_tokens, 7);
  EXPECT_EQ(c.markov_rank, 256);
  EXPECT_TRUE(c.enable_confidence_head && c.confidence_head_with_markov);
  EXPECT_EQ(c.mask_token_id, 151669);
  EXPECT_FLOAT_EQ(c.confidence_temperature(2), 1.2f);
  EXPECT_EQ(c.verifier_name_or_path, "Qwen/Qwen3-4B");
  EXPECT_NO_THROW(c.validate_for_target(qwen3_4b(), "drafter.json"));
  // The tensor list the loader checks: fc over 5 aux layers, Markov [V, r], confidence [1, H + r].
  const auto tensors = drafter_tensors(c);
  auto shape_of = [&](const std::string& name) {
    for (const auto& t : tensors) if (t.name == name) return t.shape;
    return std::vector<int64_t>{};
  };
  EXPECT_EQ(shape_of("fc.weight"), (std::vector<int64_t>{2560, 5 * 2560}));
  EXPECT_EQ(shape_of("layers.4.self_attn.k_norm.weight"), (std::vector<int64_t>{128}));
  EXPECT_EQ(shape_of("markov_head.markov_w2.weight"), (std::vector<int64_t>{151936, 256}));
  EXPECT_EQ(shape_of("confidence_head.proj.weight"), (std::vector<int64_t>{1, 2560 + 256}));
}

TEST(DrafterConfig, AuxLayerIdsAreOneAboveCaptureLayers) {
  // speculators / vLLM id k = residual stream after k layers = output of decoder layer k-1;
  // DeepSpec's Qwen3-4B target_layer_ids are [1, 9, 17, 25, 33] in the engine's convention.
  const DrafterConfig c = DrafterConfig::from_json(published_dspark(), "drafter.json");
  EXPECT_EQ(c.capture_layers(), (std::vector<int32_t>{1, 9, 17, 25, 33}));
  EXPECT_EQ(aux_layer_id_to_capture_layer(1), 0);
  EXPECT_EQ(aux_layer_id_to_capture_layer(36), 35);  // the last layer's output, before the final norm
  for (int32_t l = 0; l < 64; ++l) EXPECT_EQ(aux_layer_id_to_capture_layer(capture_layer_to_aux_layer_id(l)), l);
  // id 36 is valid for a 36-layer target, 37 is not, 0 (the embeddings) never is.
  json j = published_dspark();
  j["aux_hidden_state_layer_ids"] = {36};
  EXPECT_EQ(target_error(j, qwen3_4b()), "");
  j["aux_hidden_state_layer_ids"] = {37};
  EXPECT_NE(target_error(j, qwen3_4b()).find("aux_hidden_state_layer_ids entry 37 is outside 1..36"), std::string::npos);
  j["aux_hidden_state_layer_ids"] = {0, 5};
  EXPECT_NE(parse_error(j).find("entry 0 is not supported"), std::string::npos);
}

TEST(DrafterConfig, WriterRoundTrips) {
  const DrafterConfig c = DrafterConfig::from_json(published_dspark(), "drafter.json");
  EXPECT_EQ(DrafterConfig::from_json(c.to_json(), "written"), c);
  // Temperatures for sampling requests: written, read back, used for them; absent, the greedy ones.
  EXPECT_FALSE(c.to_json().contains("confidence_temperatures_sampled"));
  EXPECT_EQ(c.confidence_temperature(2, /*sampled=*/true), 1.2f);
  DrafterConfig sampled = c;
  sampled.confidence_temperatures_sampled = {2.0f, 2.1f, 2.2f, 2.3f, 2.4f, 2.5f, 2.6f};
  EXPECT_EQ(DrafterConfig::from_json(sampled.to_json(), "written"), sampled);
  EXPECT_EQ(sampled.confidence_temperature(2, /*sampled=*/true), 2.2f);
  EXPECT_EQ(sampled.confidence_temperature(2, /*sampled=*/false), 1.2f);
  // Repeat shifts: absent = none; written and read back.
  EXPECT_FALSE(c.to_json().contains("confidence_repeat_shifts"));
  EXPECT_EQ(c.confidence_repeat_shift(true), 0.0f);
  DrafterConfig shifted = c;
  shifted.confidence_repeat_shifts = {-0.75f, 3.0f};
  EXPECT_EQ(DrafterConfig::from_json(shifted.to_json(), "written"), shifted);
  EXPECT_EQ(shifted.confidence_repeat_shift(false), -0.75f);
  EXPECT_EQ(shifted.confidence_repeat_shift(true), 3.0f);
  // Weights quantized at load: absent = as the target's; written and read back (calibration
  // and training rewrite the config through here).
  EXPECT_FALSE(c.to_json().contains("quantization"));
  DrafterConfig int8 = c;
  int8.quantization = "int8";
  EXPECT_EQ(int8.to_json()["quantization"], "int8");
  EXPECT_EQ(DrafterConfig::from_json(int8.to_json(), "written"), int8);
  // A contextual Markov head: its width written, read back, and its two MLP tensors listed.
  EXPECT_FALSE(c.to_json().contains("markov_context_size"));
  DrafterConfig contextual = c;
  contextual.markov_head_type = "contextual";
  contextual.markov_context_size = 96;
  EXPECT_EQ(contextual.to_json()["markov_context_size"], 96);
  EXPECT_EQ(DrafterConfig::from_json(contextual.to_json(), "written"), contextual);
  EXPECT_TRUE(contextual.contextual_markov() && !c.contextual_markov());
  std::map<std::string, std::vector<int64_t>> mlp;
  for (const auto& t : drafter_tensors(contextual))
    if (t.name.starts_with("markov_head.context_")) mlp[t.name] = t.shape;
  const int64_t h = c.layer.hidden_size, r = c.markov_rank;
  EXPECT_EQ(mlp, (std::map<std::string, std::vector<int64_t>>{{"markov_head.context_in.weight", {96, h + r}},
                                                              {"markov_head.context_out.weight", {r, 96}}}));
  DrafterConfig d = c;
  d.kind = DrafterKind::kDFlash;
  d.architecture = "DFlashDraftModel";
  d.sample_from_anchor = false;
  d.markov_rank = 0;
  d.enable_confidence_head = d.confidence_head_with_markov = false;
  d.confidence_temperatures.clear();
  d.speculative_tokens = 6;
  const json written = d.to_json();
  EXPECT_EQ(written["speculators_model_type"], "dflash");
  EXPECT_EQ(written["speculators_config"]["proposal_methods"][0]["speculative_tokens"], 6);
  EXPECT_EQ(DrafterConfig::from_json(written, "written"), d);
  // Through a file, as the trainer writes it.
  const auto dir = testing::make_temp_dir("drafter-config");
  std::ofstream(dir / "config.json") << written.dump(2);
  EXPECT_TRUE(is_drafter_directory(dir));
  EXPECT_EQ(DrafterConfig::from_file(dir), d);
  std::ofstream(dir / "config.json") << R"({"model_type": "llama"})";
  EXPECT_FALSE(is_drafter_directory(dir));
}

TEST(DrafterConfig, DFlashDefaults) {
  json j = published_dspark();
  j["architectures"] = {"DFlashDraftModel"};
  j["speculators_model_type"] = "dflash";
  j["speculators_config"]["algorithm"] = "dflash";
  j["speculators_config"]["proposal_methods"][0]["speculative_tokens"] = 6;
  j["markov_rank"] = 0;
  j["enable_confidence_head"] = false;
  j.erase("confidence_temperatures");
  const DrafterConfig c = DrafterConfig::from_json(j, "drafter.json");
  EXPECT_EQ(c.kind, DrafterKind::kDFlash);
  EXPECT_FALSE(c.sample_from_anchor);  // the anchor slot does not predict: γ-1 drafts
  EXPECT_EQ(c.num_drafts(), 6);
  EXPECT_FALSE(c.confidence_head_with_markov);
  // speculators' sample_from_anchor overrides the default (DeepSpec's DFlash baseline).
  j["sample_from_anchor"] = true;
  j["speculators_config"]["proposal_methods"][0]["speculative_tokens"] = 7;
  EXPECT_EQ(DrafterConfig::from_json(j, "drafter.json").num_drafts(), 7);
  // No speculators_config: the block's drafts.
  j.erase("speculators_config");
  EXPECT_EQ(DrafterConfig::from_json(j, "drafter.json").speculative_tokens, 7);
}

TEST(DrafterConfig, ParseErrorsNameTheField) {
  struct Case {
    std::function<void(json&)> edit;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](json& j) { j.erase("speculators_model_type"); }, "missing required field 'speculators_model_type'"},
      {[](json& j) { j["speculators_model_type"] = "eagle3"; }, "speculators_model_type 'eagle3' is not a block drafter"},
      {[](json& j) { j["architectures"] = {"DFlashDraftModel"}; }, "architectures 'DFlashDraftModel' disagrees"},
      {[](json& j) { j["architectures"] = {"LlamaForCausalLM"}; }, "architectures 'LlamaForCausalLM' is not a supported"},
      {[](json& j) { j.erase("transformer_layer_config"); }, "missing required field 'transformer_layer_config'"},
      {[](json& j) { j["transformer_layer_config"].erase("hidden_size"); },
       "transformer_layer_config): missing required field 'hidden_size'"},
      {[](json& j) { j["transformer_layer_config"]["model_type"] = "gemma4"; }, "unsupported model_type 'gemma4'"},
      {[](json& j) { j["block_size"] = "7"; }, "field 'block_size' must be an integer"},
      {[](json& j) { j["block_size"] = 0; }, "field 'block_size' must be positive"},
      {[](json& j) { j.erase("mask_token_id"); }, "missing required field 'mask_token_id'"},
      {[](json& j) { j["aux_hidden_state_layer_ids"] = json::array(); }, "'aux_hidden_state_layer_ids' is empty"},
      {[](json& j) { j["aux_hidden_state_layer_ids"] = {3, 3}; }, "aux_hidden_state_layer_ids repeats 3"},
      {[](json& j) { j["aux_hidden_state_layer_ids"] = 3; }, "'aux_hidden_state_layer_ids' must be a list of integers"},
      {[](json& j) { j["markov_head_type"] = "gated"; }, "markov_head_type 'gated' is not supported"},
      {[](json& j) { j["quantization"] = "int2"; }, "field 'quantization' must be \"none\", \"int8\" or \"int4\", got 'int2'"},
      {[](json& j) { j["quantization"] = 8; }, "field 'quantization' must be a string"},
      {[](json& j) { j["markov_head_type"] = "contextual"; }, "'contextual' needs a positive 'markov_context_size'"},
      {[](json& j) { j["markov_context_size"] = 64; }, "'markov_context_size' is 64 but the Markov head is not contextual"},
      {[](json& j) {
         j["markov_head_type"] = "contextual";
         j["markov_context_size"] = -3;
       },
       "field 'markov_context_size' must be >= 0, got -3"},
      {[](json& j) { j["markov_rank"] = 0; }, "confidence_head_with_markov needs a Markov head"},
      {[](json& j) { j["enable_confidence_head"] = "yes"; }, "'enable_confidence_head' must be true or false"},
      {[](json& j) { j["confidence_temperatures"] = {1.0, 2.0}; }, "'confidence_temperatures' has 2 entries; the drafter makes 7"},
      {[](json& j) { j["confidence_temperatures"][3] = 0.0; }, "confidence_temperatures entry 0 must be a positive"},
      {[](json& j) { j["confidence_temperatures_sampled"] = {1.0}; },
       "'confidence_temperatures_sampled' has 1 entries; the drafter makes 7"},
      {[](json& j) { j["confidence_temperatures_sampled"] = {1, 1, 1, -1, 1, 1, 1}; },
       "confidence_temperatures_sampled entry -1 must be a positive"},
      {[](json& j) { j["confidence_repeat_shifts"] = {1.0}; },
       "'confidence_repeat_shifts' has 1 entries; it takes 2 (disagree, agree)"},
      {[](json& j) { j["confidence_repeat_shifts"] = {1.0, "x"}; }, "'confidence_repeat_shifts'"},
      {[](json& j) {
         j["confidence_repeat_shifts"] = {-1.0, 2.0};
         j.erase("confidence_temperatures");
         j["enable_confidence_head"] = false;
         j["confidence_head_with_markov"] = false;
       },
       "confidence_repeat_shifts given but enable_confidence_head is false"},
      {[](json& j) {
         j["confidence_temperatures_sampled"] = {1, 1, 1, 1, 1, 1, 1};
         j.erase("confidence_temperatures");
         j["enable_confidence_head"] = false;
         j["confidence_head_with_markov"] = false;
       },
       "confidence_temperatures_sampled given but enable_confidence_head is false"},
      {[](json& j) { j["speculators_config"]["algorithm"] = "dflash"; }, "speculators_config.algorithm 'dflash' disagrees"},
      {[](json& j) { j["speculators_config"]["proposal_methods"][0]["speculative_tokens"] = 8; },
       "speculative_tokens 8 must be within 1..7"},
      {[](json& j) { j["speculators_config"]["default_proposal_method"] = "tree"; },
       "default_proposal_method 'tree' is not among proposal_methods"},
      {[](json& j) {
         j["speculators_model_type"] = "dflash";
         j["architectures"] = {"DFlashDraftModel"};
         j["block_size"] = 1;
         j["markov_rank"] = 0;
         j["enable_confidence_head"] = false;
         j.erase("confidence_temperatures");
         j.erase("speculators_config");
       },
       "block_size 1 leaves no draft position"},
  };
  for (const Case& c : cases) {
    json j = published_dspark();
    c.edit(j);
    const std::string message = parse_error(j);
    EXPECT_NE(message.find(c.expected), std::string::npos) << "expected '" << c.expected << "', got '" << message << "'";
    EXPECT_NE(message.find("drafter.json"), std::string::npos) << message;
  }
}

TEST(DrafterConfig, TargetMismatchesNameBothValues) {
  const ModelConfig target = qwen3_4b();
  json j = published_dspark();
  j["target_hidden_size"] = 4096;
  EXPECT_NE(target_error(j, target).find("target_hidden_size is 4096 but the target's hidden_size is 2560"),
            std::string::npos);
  j = published_dspark();
  j["transformer_layer_config"]["vocab_size"] = 32000;
  j["draft_vocab_size"] = 32000;
  EXPECT_NE(target_error(j, target).find("vocab_size is 32000 but the target's vocab_size is 151936"), std::string::npos);
  j = published_dspark();
  j["draft_vocab_size"] = 32000;  // a reduced draft vocabulary: fine
  EXPECT_EQ(target_error(j, target), "");
  j["draft_vocab_size"] = 151937;
  EXPECT_NE(target_error(j, target).find("'draft_vocab_size' is 151937; it must be within 1..151936"),
            std::string::npos);
  j = published_dspark();
  j["greedy_draft_vocab_size"] = 151936;
  EXPECT_NE(target_error(j, target).find("'greedy_draft_vocab_size' is 151936; it must be within 0..151935"),
            std::string::npos);
  j = published_dspark();
  j["mask_token_id"] = 151936;
  EXPECT_NE(target_error(j, target).find("mask_token_id is 151936 but the target's vocabulary has 151936 tokens"),
            std::string::npos);
  j = published_dspark();
  j["aux_hidden_state_layer_ids"] = {2, 10, 40};
  EXPECT_NE(target_error(j, target).find("entry 40 is outside 1..36"), std::string::npos);
}

}  // namespace
}  // namespace dspark
