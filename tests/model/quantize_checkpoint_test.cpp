#include "model/quantize_checkpoint.h"

#include <cstring>
#include <fstream>
#include <numeric>
#include <string>
#include <tuple>
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

class QuantizeCheckpoint : public ::testing::TestWithParam<std::tuple<bool, int>> {};  // tied embeddings, bits

// A checkpoint saved quantized loads to the same bits as quantizing at load, whatever
// --quantization says (its weights exist only as int8 or 4-bit values).
TEST_P(QuantizeCheckpoint, LoadsToTheSameBitsAsQuantizingAtLoad) {
  const auto [tied, bits] = GetParam();
  const WeightQuantization quantization = bits == 8 ? WeightQuantization::kInt8 : WeightQuantization::kInt4;
  const WeightQuantization other = bits == 8 ? WeightQuantization::kInt4 : WeightQuantization::kInt8;
  testing::TinyModelSpec spec;
  spec.tie_word_embeddings = tied;
  spec.file_dtype = DType::kBF16;
  const fs::path original = testing::write_tiny_model(spec, testing::make_temp_dir("quantize-src"));
  const fs::path quantized = testing::make_temp_dir("quantize-out") / "q";
  quantize_checkpoint(original, quantized, bits);

  const WeightStore store(quantized);
  EXPECT_EQ(store.find("model.layers.0.self_attn.q_proj.weight").dtype, DType::kI8);
  EXPECT_EQ(store.find("lm_head.weight").dtype, DType::kI8);
  // 4-bit weights two to a byte
  EXPECT_EQ(store.find("lm_head.weight").shape,
            (std::vector<int64_t>{spec.vocab_size, bits == 8 ? spec.hidden_size : spec.hidden_size / 2}));
  EXPECT_EQ(store.find("lm_head.weight_scale").shape, (std::vector<int64_t>{spec.vocab_size, (spec.hidden_size + 31) / 32}));
  EXPECT_EQ(store.find("lm_head.weight_scale").dtype, bits == 8 ? DType::kF32 : DType::kF16);
  EXPECT_EQ(store.find("model.embed_tokens.weight").dtype, DType::kBF16);
  EXPECT_EQ(ModelConfig::from_file(quantized / "config.json").stored_weight_bits, bits);

  const auto at_load = prompt_logits(original, quantization);
  EXPECT_TRUE(same_bits(prompt_logits(quantized, WeightQuantization::kNone), at_load));
  EXPECT_TRUE(same_bits(prompt_logits(quantized, quantization), at_load));
  EXPECT_TRUE(same_bits(prompt_logits(quantized, other), at_load));  // the stored format decides
  EXPECT_FALSE(same_bits(prompt_logits(original, WeightQuantization::kNone), at_load));
  EXPECT_FALSE(same_bits(prompt_logits(original, other), at_load));

  EXPECT_THROW(quantize_checkpoint(quantized, testing::make_temp_dir("quantize-again") / "x", bits), Error);
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantizeCheckpoint,
                         ::testing::Combine(::testing::Bool(), ::testing::Values(8, 4)), [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "tied" : "untied") + "_int" +
                                  std::to_string(std::get<1>(info.param));
                         });

// A 4-bit checkpoint whose weight holds the nibble 0 (-8, which the format never writes),
// whose scales are not f16 values or whose fused projections mix 8- and 4-bit weights is
// refused, naming the tensor.
TEST(QuantizeCheckpoint, CorruptFourBitWeightsAreRefusedNamingTheTensor) {
  testing::TinyModelSpec spec;
  const fs::path original = testing::write_tiny_model(spec, testing::make_temp_dir("quantize-bad4-src"));
  const fs::path dir = testing::make_temp_dir("quantize-bad4") / "int4";
  quantize_checkpoint(original, dir, 4);
  const std::string weight = "model.layers.1.mlp.down_proj.weight";
  rewrite(dir, [&](std::vector<TensorToWrite>& t) {
    for (auto& x : t)
      if (x.name == weight) x.bytes[5] = std::byte{0x80};  // low nibble 0
  });
  const std::string zero = load_error(dir);
  EXPECT_NE(zero.find(weight), std::string::npos) << zero;
  EXPECT_NE(zero.find("nibble 0"), std::string::npos) << zero;

  // scales stored as f32 values that no f16 holds
  quantize_checkpoint(original, dir, 4);
  const std::string scale = "model.layers.0.mlp.gate_proj.weight_scale";
  rewrite(dir, [&](std::vector<TensorToWrite>& t) {
    for (auto& x : t)
      if (x.name == scale) {
        std::vector<float> values(static_cast<size_t>(x.shape[0] * x.shape[1]), 0.01f);  // not an f16 value
        x = make_f32_tensor(scale, x.shape, values);
      }
  });
  const std::string not_f16 = load_error(dir);
  EXPECT_NE(not_f16.find(scale), std::string::npos) << not_f16;
  EXPECT_NE(not_f16.find("f16 values"), std::string::npos) << not_f16;

  const fs::path int8_dir = testing::make_temp_dir("quantize-bad4") / "int8";
  quantize_checkpoint(original, int8_dir, 8);
  quantize_checkpoint(original, dir, 4);
  const std::string k_proj = "model.layers.0.self_attn.k_proj.weight";
  std::vector<TensorToWrite> eight;
  {
    const WeightStore store(int8_dir);
    const TensorInfo& info = store.find(k_proj);
    eight.push_back({k_proj, info.dtype, info.shape, {}});
    eight.back().bytes.assign(info.bytes.begin(), info.bytes.end());
  }
  rewrite(dir, [&](std::vector<TensorToWrite>& t) {
    for (auto& x : t)
      if (x.name == k_proj) x = eight[0];
  });
  const std::string mixed = load_error(dir);
  EXPECT_NE(mixed.find(k_proj), std::string::npos) << mixed;
  EXPECT_NE(mixed.find("bits"), std::string::npos) << mixed;
}

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
