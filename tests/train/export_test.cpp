// Export to a Hugging Face directory: tensor names/shapes/dtypes of the HF Llama layout, a
// config.json that ModelConfig::from_file reads back, tokenizer files copied, and a reload
// that computes the logits of the bf16-rounded model. Also checkpoint -> export.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <ATen/ATen.h>

#include "core/check.h"
#include "loader/config.h"
#include "loader/safetensors.h"
#include "train/checkpoint.h"
#include "train/export.h"
#include "train/model/hf_weights.h"
#include "train/model/transformer.h"
#include "train/pretrain/adamw.h"

namespace dspark::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

ModelConfig small_config(bool tied) {
  ModelConfig c;
  c.model_type = ModelType::kLlama;
  c.model_type_name = "llama";
  c.vocab_size = 50;
  c.hidden_size = 32;
  c.intermediate_size = 48;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.max_position_embeddings = 128;
  c.rms_norm_eps = 1e-5f;
  c.tie_word_embeddings = tied;
  return c;
}

// The Hugging Face Llama layout, written out from the config independently of the module.
std::map<std::string, std::vector<int64_t>> expected_layout(const ModelConfig& c) {
  const int64_t h = c.hidden_size, f = c.intermediate_size, q = c.num_attention_heads * c.head_dim,
                kv = c.num_key_value_heads * c.head_dim;
  std::map<std::string, std::vector<int64_t>> out;
  out["model.embed_tokens.weight"] = {c.vocab_size, h};
  out["model.norm.weight"] = {h};
  if (!c.tie_word_embeddings) out["lm_head.weight"] = {c.vocab_size, h};
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    out[p + "self_attn.q_proj.weight"] = {q, h};
    out[p + "self_attn.k_proj.weight"] = {kv, h};
    out[p + "self_attn.v_proj.weight"] = {kv, h};
    out[p + "self_attn.o_proj.weight"] = {h, q};
    out[p + "mlp.gate_proj.weight"] = {f, h};
    out[p + "mlp.up_proj.weight"] = {f, h};
    out[p + "mlp.down_proj.weight"] = {h, f};
    out[p + "input_layernorm.weight"] = {h};
    out[p + "post_attention_layernorm.weight"] = {h};
  }
  return out;
}

class ExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("dspark_export_test_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
             "_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "tok");
    std::ofstream(root_ / "tok" / "tokenizer.json") << "{\"model\": {}}\n";
    std::ofstream(root_ / "tok" / "tokenizer_config.json") << "{\"eos_token\": \"<|end|>\"}\n";
    std::ofstream(root_ / "tok" / "special_tokens_map.json") << "{}\n";
  }
  void TearDown() override { fs::remove_all(root_); }

  std::shared_ptr<CausalLmImpl> model(bool tied) const {
    auto m = std::make_shared<CausalLmImpl>(small_config(tied));
    m->init_weights(0.1, 3);
    return m;
  }

  ExportOptions options() const {
    ExportOptions o;
    o.tokenizer_dir = root_ / "tok";
    o.eos_id = 7;
    o.pad_id = 8;
    return o;
  }

  fs::path root_;
};

void expect_hf_layout(const fs::path& dir, const ModelConfig& c) {
  SafetensorsFile file(dir / "model.safetensors");
  const auto layout = expected_layout(c);
  std::set<std::string> names;
  for (const auto& [name, info] : file.tensors()) {
    names.insert(name);
    auto it = layout.find(name);
    ASSERT_NE(it, layout.end()) << "unexpected tensor " << name;
    EXPECT_EQ(info.shape, it->second) << name;
    EXPECT_EQ(info.dtype, DType::kBF16) << name;
  }
  EXPECT_EQ(names.size(), layout.size());
}

TEST_F(ExportTest, WritesHuggingFaceLayoutForTiedAndUntiedModels) {
  for (bool tied : {true, false}) {
    SCOPED_TRACE(tied ? "tied" : "untied");
    auto m = model(tied);
    const fs::path out = root_ / (tied ? "hf_tied" : "hf_untied");
    export_hf(*m, out, options());
    expect_hf_layout(out, m->config());

    const ModelConfig read = ModelConfig::from_file(out);
    ModelConfig expected = m->config();
    expected.torch_dtype = "bfloat16";
    expected.eos_token_id = 7;
    expected.eos_token_ids = {7};
    expected.bos_token_id = -1;
    EXPECT_TRUE(read == expected);
    EXPECT_EQ(read.tie_word_embeddings, tied);

    json config = json::parse(std::ifstream(out / "config.json"));
    EXPECT_EQ(config["architectures"], json::array({"LlamaForCausalLM"}));
    EXPECT_EQ(config["model_type"], "llama");
    EXPECT_EQ(config["torch_dtype"], "bfloat16");
    json gen = json::parse(std::ifstream(out / "generation_config.json"));
    EXPECT_EQ(gen["eos_token_id"], 7);
    EXPECT_EQ(gen["pad_token_id"], 8);
    for (const char* name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"})
      EXPECT_TRUE(fs::exists(out / name)) << name;
    for (const auto& entry : fs::directory_iterator(out))
      EXPECT_NE(entry.path().extension(), ".tmp") << entry.path();
  }
}

TEST_F(ExportTest, ExportingIntoTheTokenizerDirectoryKeepsItsFiles) {
  std::ofstream(root_ / "tok" / "README.md") << "how this model was made\n";
  auto m = model(true);
  ExportOptions o = options();
  export_hf(*m, root_ / "tok", o);
  export_hf(*m, root_ / "tok", o);  // again, over its own output
  expect_hf_layout(root_ / "tok", m->config());
  EXPECT_TRUE(fs::exists(root_ / "tok" / "README.md"));
  json tokenizer = json::parse(std::ifstream(root_ / "tok" / "tokenizer.json"));
  EXPECT_TRUE(tokenizer.contains("model"));
  EXPECT_EQ(ModelConfig::from_file(root_ / "tok").eos_token_id, 7);
}

TEST_F(ExportTest, ReloadComputesTheBf16RoundedModel) {
  auto m = model(false);
  export_hf(*m, root_ / "hf", options());
  {
    at::NoGradGuard no_grad;
    for (auto& p : m->parameters()) p.copy_(p.to(at::kBFloat16).to(at::kFloat));
  }
  const std::vector<int32_t> tokens = {1, 5, 9, 49, 0, 3};
  const auto expected = hf_logits(*m, tokens);
  const auto reloaded = hf_logits(root_ / "hf", tokens);
  ASSERT_EQ(reloaded.sizes(), (std::vector<int64_t>{6, 50}));
  EXPECT_TRUE(at::allclose(reloaded, expected, 1e-5, 1e-5));
}

TEST_F(ExportTest, ExportsACheckpointWithItsRecordedIdsAndTokenizer) {
  auto m = model(true);
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (auto& item : m->named_parameters()) named.emplace_back(item.key(), item.value());
  AdamW opt(named, AdamWOptions{});
  const json state{{"step", 3}, {"tokenizer_dir", (root_ / "tok").string()}, {"eos_id", 4}, {"pad_id", 5},
                   {"bos_id", -1}};
  save_checkpoint(root_ / "run", *m, opt, state);
  ASSERT_EQ(find_checkpoint(root_ / "run"), root_ / "run" / "checkpoint");
  // The checkpoint itself reads as an f32 Hugging Face directory.
  EXPECT_TRUE(at::equal(hf_logits(root_ / "run" / "checkpoint", std::vector<int32_t>{1, 2, 3}),
                           hf_logits(*m, std::vector<int32_t>{1, 2, 3})));

  export_checkpoint(root_ / "run", root_ / "out", ExportOptions{});
  expect_hf_layout(root_ / "out", m->config());
  EXPECT_EQ(ModelConfig::from_file(root_ / "out").eos_token_id, 4);
  EXPECT_TRUE(fs::exists(root_ / "out" / "tokenizer.json"));
}

TEST_F(ExportTest, LoadingRejectsMissingUnknownAndMisshapenTensors) {
  auto m = model(false);
  export_hf(*m, root_ / "hf", options());
  auto other = std::make_shared<CausalLmImpl>(small_config(true));  // has no lm_head: ignores a stored one
  EXPECT_NO_THROW(load_hf_weights(*other, WeightStore(root_ / "hf")));

  ModelConfig deeper = small_config(false);
  deeper.num_hidden_layers = 3;
  CausalLmImpl three(deeper);
  EXPECT_THROW(load_hf_weights(three, WeightStore(root_ / "hf")), Error);  // layer 2 missing

  ModelConfig shallower = small_config(false);
  shallower.num_hidden_layers = 1;
  CausalLmImpl one(shallower);
  EXPECT_THROW(load_hf_weights(one, WeightStore(root_ / "hf")), Error);  // layer 1 unknown

  ModelConfig wider = small_config(false);
  wider.intermediate_size = 64;
  CausalLmImpl wide(wider);
  EXPECT_THROW(load_hf_weights(wide, WeightStore(root_ / "hf")), Error);  // shape mismatch
}

}  // namespace
}  // namespace dspark::train
