#include "model/quantize_checkpoint.h"

#include <cstring>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "model/block_allocator.h"
#include "model/kv_pool.h"
#include "loader/safetensors.h"
#include "model/transformer.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

namespace fs = std::filesystem;

// Logits of every row of one 12-token prompt.
std::vector<float> prompt_logits(const fs::path& dir, WeightQuantization quantization) {
  TransformerOptions options;
  options.quantization = quantization;
  options.max_batch_tokens = 16;
  const auto model = Transformer::load(dir, options);
  KvPool kv(model->config(), KvPoolOptions{4, 16, DType::kF32});
  BlockAllocator allocator(4);
  BlockTable table;
  EXPECT_TRUE(table.reserve(12, 16, allocator));
  std::vector<int32_t> ids(12), rows(12);
  for (int i = 0; i < 12; ++i) ids[i] = (7 * i + 3) % static_cast<int>(model->config().vocab_size);
  std::iota(rows.begin(), rows.end(), 0);
  const SequenceSlice slice{12, 0, table.data()};
  const ForwardResult r = model->forward(ForwardBatch{ids, {&slice, 1}, rows}, kv);
  return std::vector<float>(r.logits, r.logits + 12 * model->config().vocab_size);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Rewrites dir/model.safetensors through edit(tensors).
template <typename Edit>
void rewrite(const fs::path& dir, Edit edit) {
  std::vector<TensorToWrite> tensors;
  {
    const WeightStore store(dir);
    for (const std::string& name : store.names()) {
      const TensorInfo& info = store.find(name);
      TensorToWrite t{name, info.dtype, info.shape, {}};
      t.bytes.assign(info.bytes.begin(), info.bytes.end());
      tensors.push_back(std::move(t));
    }
  }
  edit(tensors);
  write_safetensors(dir / "model.safetensors", tensors);
}

std::string load_error(const fs::path& dir) {
  try {
    Transformer::load(dir, TransformerOptions{});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class QuantizeCheckpoint : public ::testing::TestWithParam<bool> {};  // tied embeddings

// A checkpoint saved quantized loads to the same bits as quantizing at load, whatever
// --quantization says (its weights exist only as int8).
TEST_P(QuantizeCheckpoint, LoadsToTheSameBitsAsQuantizingAtLoad) {
  testing::TinyModelSpec spec;
  spec.tie_word_embeddings = GetParam();
  spec.file_dtype = DType::kBF16;
  const fs::path original = testing::write_tiny_model(spec, testing::make_temp_dir("quantize-src"));
  const fs::path quantized = testing::make_temp_dir("quantize-out") / "int8";
  quantize_checkpoint(original, quantized);

  const WeightStore store(quantized);
  EXPECT_EQ(store.find("model.layers.0.self_attn.q_proj.weight").dtype, DType::kI8);
  EXPECT_EQ(store.find("lm_head.weight").dtype, DType::kI8);
  EXPECT_EQ(store.find("lm_head.weight_scale").shape, (std::vector<int64_t>{spec.vocab_size, (spec.hidden_size + 31) / 32}));
  EXPECT_EQ(store.find("model.embed_tokens.weight").dtype, DType::kBF16);
  EXPECT_TRUE(ModelConfig::from_file(quantized / "config.json").int8_weights);

  const auto at_load = prompt_logits(original, WeightQuantization::kInt8);
  EXPECT_TRUE(same_bits(prompt_logits(quantized, WeightQuantization::kNone), at_load));
  EXPECT_TRUE(same_bits(prompt_logits(quantized, WeightQuantization::kInt8), at_load));
  EXPECT_FALSE(same_bits(prompt_logits(original, WeightQuantization::kNone), at_load));

  EXPECT_THROW(quantize_checkpoint(quantized, testing::make_temp_dir("quantize-again") / "x"), Error);
}

INSTANTIATE_TEST_SUITE_P(Embeddings, QuantizeCheckpoint, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "tied" : "untied"; });

TEST(QuantizeCheckpoint, MissingOrMisshapedScalesAreRefusedNamingTheTensor) {
  testing::TinyModelSpec spec;
  const fs::path original = testing::write_tiny_model(spec, testing::make_temp_dir("quantize-bad-src"));
  const fs::path dir = testing::make_temp_dir("quantize-bad") / "int8";
  quantize_checkpoint(original, dir);
  const std::string scale = "model.layers.1.mlp.up_proj.weight_scale";

  rewrite(dir, [&](std::vector<TensorToWrite>& t) {
    std::erase_if(t, [&](const TensorToWrite& x) { return x.name == scale; });
  });
  EXPECT_NE(load_error(dir).find(scale), std::string::npos) << load_error(dir);

  quantize_checkpoint(original, dir);
  rewrite(dir, [&](std::vector<TensorToWrite>& t) {
    for (auto& x : t)
      if (x.name == scale) {
        x.shape[1] += 1;
        x.bytes.resize(x.bytes.size() + static_cast<size_t>(x.shape[0]) * 4);
      }
  });
  const std::string misshaped = load_error(dir);
  EXPECT_NE(misshaped.find(scale), std::string::npos) << misshaped;
  EXPECT_NE(misshaped.find("shape"), std::string::npos) << misshaped;
}

TEST(QuantizeCheckpoint, UnknownQuantizationMethodIsRefused) {
  testing::TinyModelSpec spec;
  const fs::path dir = testing::write_tiny_model(spec, testing::make_temp_dir("quantize-gptq"));
  nlohmann::json config;
  std::ifstream(dir / "config.json") >> config;
  config["quantization_config"] = {{"quant_method", "gptq"}, {"bits", 4}};
  std::ofstream(dir / "config.json") << config.dump();
  const std::string error = load_error(dir);
  EXPECT_NE(error.find("quant_method 'gptq' is not supported"), std::string::npos) << error;
}

}  // namespace
}  // namespace dspark
