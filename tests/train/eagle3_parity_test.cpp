// Trainer ↔ engine parity of EAGLE-3: a drafter built and exported by the trainer
// (speculators layout, f32 tensors, d2t / t2d) is loaded by the engine's Eagle3Proposer and
// fed the same target hidden states; its greedy drafts and their draft-vocabulary logits must
// match Eagle3Impl::draft() on the same inputs. Both sides compute in f32 and differ only in
// summation order (logits 1e-3 absolute on O(1)–O(10) values).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <vector>

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "spec/eagle3_proposer.h"
#include "train/draft/eagle3.h"
#include "train/draft/eagle3_io.h"
#include "train/export.h"
#include "train/model/hf_weights.h"
#include "train/model/transformer.h"

namespace dspark::train {
namespace {

namespace fs = std::filesystem;

ModelConfig target_config(bool qwen3) {
  ModelConfig c;
  c.model_type = qwen3 ? ModelType::kQwen3 : ModelType::kLlama;
  c.model_type_name = qwen3 ? "qwen3" : "llama";
  c.vocab_size = 64;
  c.hidden_size = 32;
  c.intermediate_size = 48;
  c.num_hidden_layers = 4;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.max_position_embeddings = 128;
  c.rms_norm_eps = 1e-6f;
  c.qk_norm = qwen3;
  c.tie_word_embeddings = !qwen3;
  c.eos_token_id = 0;
  c.eos_token_ids = {0};
  return c;
}

std::vector<float> to_floats(const torch::Tensor& t) {
  auto c = t.detach().to(at::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

class Eagle3ParityTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("dspark_eagle3_parity_" + std::to_string(::getpid()) + "_" +
                                         std::to_string(GetParam()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_P(Eagle3ParityTest, EngineProposerMatchesTheTrainerModule) {
  const bool qwen3 = GetParam();
  at::NoGradGuard no_grad;
  {
    CausalLmImpl t(target_config(qwen3));
    t.init_weights(0.3, 5);
    export_hf(t, root_ / "target", ExportOptions{});
  }
  auto target = load_hf_model(root_ / "target");
  Eagle3ShapeOptions shape;
  shape.aux_layer_ids = {1, 3, 4};
  shape.draft_vocab_size = 24;
  std::vector<int64_t> counts(64);
  for (size_t t = 0; t < counts.size(); ++t) counts[t] = static_cast<int64_t>((t * 29) % 13);
  auto drafter = make_eagle3(make_eagle3_config(target->config(), shape), *target, build_draft_vocab(counts, 24), 0.3, 9);
  for (auto& item : drafter->named_parameters()) {  // non-trivial norms
    if (item.key().find("norm") != std::string::npos) item.value().uniform_(0.5, 1.5);
  }
  DrafterExportOptions ex;
  ex.dtype = DType::kF32;
  export_eagle3(*drafter, root_ / "drafter", ex);

  // One sequence of n tokens: context rows 0..n−2, then K drafts.
  const int64_t n = 13, k = 4, ht = target->config().hidden_size, vd = 24;
  std::vector<int32_t> tokens(n);
  for (int64_t i = 0; i < n; ++i) tokens[i] = static_cast<int32_t>(3 + (i * 17 + 5) % 61);
  auto ids = at::tensor(std::vector<int64_t>(tokens.begin(), tokens.end()), at::kLong).view({1, n});
  const ForwardOutput out = target->forward(ids, drafter->capture_layers());
  const Eagle3Drafts expected = drafter->draft(at::cat(out.hidden_states, -1), ids, k);

  Eagle3ProposerOptions po;
  po.max_running = 1;
  po.max_model_len = 64;
  po.compute = DType::kF32;
  po.num_speculative_tokens = static_cast<int32_t>(k);  // the config records 3 (speculative_tokens)
  auto proposer = Eagle3Proposer::load(root_ / "drafter", root_ / "target", po);
  std::vector<float> packed;  // [3][n−1][H_t]
  for (const auto& x : out.hidden_states) {
    auto rows = to_floats(x.view({n, ht}).narrow(0, 0, n - 1));
    packed.insert(packed.end(), rows.begin(), rows.end());
  }
  CommittedHiddenStates committed;
  committed.slot = 0;
  committed.start_position = 0;
  committed.num_positions = static_cast<int32_t>(n - 1);
  committed.hidden = packed.data();
  committed.layer_stride = (n - 1) * ht;
  committed.hidden_size = ht;
  committed.tokens = tokens;
  proposer->observe({&committed, 1});
  SamplingParams greedy;
  greedy.temperature = 0;
  DraftRequest request{0, tokens, &greedy, nullptr, static_cast<int32_t>(k), 4};
  Draft draft;
  proposer->propose({&request, 1}, {&draft, 1});
  ASSERT_EQ(static_cast<int64_t>(draft.tokens.size()), k);

  const auto want = to_floats(expected.draft_logits);  // [1, K, V_d]
  for (int64_t j = 0; j < k; ++j) {
    const std::span<const float> got = proposer->draft_logits(0, static_cast<int32_t>(j));
    ASSERT_EQ(static_cast<int64_t>(got.size()), vd) << "draft " << j + 1;
    double err = 0;
    for (int64_t v = 0; v < vd; ++v) err = std::max(err, std::abs(static_cast<double>(got[v]) - want[j * vd + v]));
    std::printf("draft %ld: max |diff| %.3g\n", static_cast<long>(j + 1), err);
    EXPECT_LT(err, 1e-3) << "draft " << j + 1;
    std::vector<float> sorted(want.begin() + j * vd, want.begin() + (j + 1) * vd);
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
    if (sorted[0] - sorted[1] > 2e-3) {
      EXPECT_EQ(draft.tokens[j], expected.tokens[0][j].item<int64_t>()) << "draft " << j + 1;
    }
    if (draft.tokens[j] != expected.tokens[0][j].item<int64_t>()) break;  // later drafts follow different tokens
  }
}

INSTANTIATE_TEST_SUITE_P(LlamaAndQwen3, Eagle3ParityTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "qwen3" : "llama"; });

}  // namespace
}  // namespace dspark::train
