// Lossless speculative decoding needs a token's logits to be bit-identical however it is
// batched: alone or with other sequences, prefilled in one chunk or several, verified in
// a multi-token step or decoded one token at a time. Checked bit for bit, both dtypes.
#include <cstring>

#include <gtest/gtest.h>

#include "core/rng.h"
#include "kernels/sampling.h"
#include "model/transformer.h"
#include "support/engine_runner.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

using testing::EngineRunner;

std::vector<int32_t> random_tokens(int64_t n, int64_t vocab, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(rng.next_u64() % vocab);
  return t;
}

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<float> last_row(const std::vector<float>& logits, int64_t vocab) {
  return std::vector<float>(logits.end() - vocab, logits.end());
}

// Weights of the model under test: bf16 or f32 compute, or int8 weights; optionally a
// sliding window on layer 1 (layer 0 full), shorter than the prompts and the chunks.
struct Weights {
  DType compute;
  WeightQuantization quantization;
  int64_t sliding_window = 0;
};

class BatchInvariance : public ::testing::TestWithParam<Weights> {
 protected:
  void SetUp() override {
    testing::TinyModelSpec spec;
    spec.model_type = "qwen3";
    spec.hidden_size = 128;
    spec.num_heads = 4;
    spec.num_kv_heads = 2;
    spec.head_dim = 32;
    spec.intermediate_size = 160;
    spec.vocab_size = 300;
    spec.sliding_window = GetParam().sliding_window;
    spec.max_window_layers = 1;
    const auto dir = testing::write_tiny_model(spec, testing::make_temp_dir("batch-invariance"));
    TransformerOptions opts;
    opts.compute = GetParam().compute;
    opts.quantization = GetParam().quantization;
    opts.max_batch_tokens = 96;
    model_ = Transformer::load(dir, opts);
    vocab_ = spec.vocab_size;
  }
  std::unique_ptr<Transformer> model_;
  int64_t vocab_ = 0;
};

TEST_P(BatchInvariance, PrefillChunkingDoesNotChangeLogits) {
  const auto prompt = random_tokens(41, vocab_, 3);
  std::vector<float> reference;
  for (int64_t chunk : {41, 1, 3, 16, 40}) {
    EngineRunner runner(*model_, DType::kF32, 4);
    const std::vector<float> logits = runner.run(runner.add_sequence(), prompt, chunk);
    if (reference.empty()) reference = logits;
    EXPECT_TRUE(bit_equal(logits, reference)) << "chunk " << chunk;
  }
}

TEST_P(BatchInvariance, GreedyDecodeAloneEqualsBatched) {
  const auto a = random_tokens(13, vocab_, 11), b = random_tokens(29, vocab_, 12), c = random_tokens(5, vocab_, 13);
  constexpr int kSteps = 12;

  // Alone: prefill then greedy decode, keeping each step's logits.
  std::vector<std::vector<float>> alone;
  {
    EngineRunner runner(*model_, DType::kBF16, 4);
    const int s = runner.add_sequence();
    std::vector<float> logits = last_row(runner.run(s, a, 64), vocab_);
    for (int i = 0; i < kSteps; ++i) {
      alone.push_back(logits);
      const int32_t next = argmax(logits.data(), vocab_);
      logits = runner.step({{s, {next}}})[0];
    }
  }
  // Batched: the same sequence shares every forward with two others, which also join
  // and prefill in the middle of its decode.
  EngineRunner runner(*model_, DType::kBF16, 4);
  const int sa = runner.add_sequence(), sb = runner.add_sequence(), sc = runner.add_sequence();
  auto out = runner.step({{sb, std::vector<int32_t>(b.begin(), b.begin() + 10)}, {sa, a}});
  std::vector<float> logits = last_row(out[1], vocab_);
  int32_t b_next = -1, c_next = -1;
  for (int i = 0; i < kSteps; ++i) {
    EXPECT_TRUE(bit_equal(logits, alone[i])) << "step " << i;
    const int32_t next = argmax(logits.data(), vocab_);
    std::vector<std::pair<int, std::vector<int32_t>>> feeds;
    if (i == 0) feeds.push_back({sb, std::vector<int32_t>(b.begin() + 10, b.end())});
    else feeds.push_back({sb, {b_next}});
    feeds.push_back({sa, {next}});
    if (i == 2) feeds.push_back({sc, c});
    else if (i > 2) feeds.push_back({sc, {c_next}});
    out = runner.step(feeds);
    b_next = argmax(out[0].data() + out[0].size() - vocab_, vocab_);
    logits = out[1];
    if (i >= 2) c_next = argmax(out[2].data() + out[2].size() - vocab_, vocab_);
  }
}

TEST_P(BatchInvariance, MultiTokenVerifyStepEqualsOneByOne) {
  // A verification step feeds [anchor, d1..d8] at once; each row's logits must equal
  // feeding those tokens one at a time.
  const auto prompt = random_tokens(20, vocab_, 21);
  const auto drafts = random_tokens(9, vocab_, 22);
  EngineRunner one(*model_, DType::kBF16, 4), multi(*model_, DType::kBF16, 4);
  const int s1 = one.add_sequence(), s2 = multi.add_sequence();
  one.run(s1, prompt, 64);
  multi.run(s2, prompt, 64);
  const std::vector<float> together = multi.step({{s2, drafts}})[0];
  for (size_t i = 0; i < drafts.size(); ++i) {
    const std::vector<float> single = one.step({{s1, {drafts[i]}}})[0];
    EXPECT_TRUE(bit_equal(single, std::vector<float>(together.begin() + i * vocab_, together.begin() + (i + 1) * vocab_)))
        << "row " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, BatchInvariance,
                         ::testing::Values(Weights{DType::kBF16, WeightQuantization::kNone},
                                           Weights{DType::kF32, WeightQuantization::kNone},
                                           Weights{DType::kBF16, WeightQuantization::kInt8},
                                           Weights{DType::kBF16, WeightQuantization::kInt4},
                                           Weights{DType::kBF16, WeightQuantization::kNone, 7},
                                           Weights{DType::kF32, WeightQuantization::kNone, 7}),
                         [](const auto& info) {
                           std::string name = info.param.quantization != WeightQuantization::kNone
                                                  ? std::string(quantization_name(info.param.quantization))
                                                  : std::string(dtype_name(info.param.compute));
                           if (info.param.sliding_window > 0)
                             name += "_window" + std::to_string(info.param.sliding_window);
                           return name;
                         });

}  // namespace
}  // namespace dspark
