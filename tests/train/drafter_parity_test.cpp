// Trainer ↔ engine parity of block drafters: a drafter built and exported by the trainer
// (speculators layout, f32 tensors) is loaded by the engine's DSparkProposer, which is fed
// the same target hidden states; its final-norm block states, base logits U_j, corrected
// logits U_j + W₂·W₁[x_{j−1}], confidence logits z_j, calibrated confidences
// sigmoid(z_j / T_j) and greedy drafts must match the libtorch module on the same inputs.
// Both sides compute in f32; they differ only in summation order (tolerances: states 1e-4,
// logits 1e-3 absolute on O(1)–O(10) values, confidence 1e-4).
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <vector>

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "core/check.h"
#include "kernels/sampling.h"
#include "spec/drafter_config.h"
#include "spec/draft_vocab.h"
#include "spec/dspark_proposer.h"
#include "train/draft/drafter.h"
#include "train/draft/drafter_io.h"
#include "train/export.h"
#include "train/model/hf_weights.h"
#include "train/model/transformer.h"

namespace dspark::train {
namespace {

namespace fs = std::filesystem;

struct Case {
  bool qwen3;
  DrafterKind kind;
  int64_t markov_context_size = 0;  // > 0: a contextual Markov head
};

class DrafterParityTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("dspark_drafter_parity_" + std::to_string(::getpid()) + "_" +
                                         std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

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

double max_diff(std::span<const float> a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

TEST_P(DrafterParityTest, EngineProposerMatchesTheTrainerModule) {
  const Case c = GetParam();
  at::NoGradGuard no_grad;
  // Target: random weights, exported in bf16; the trainer reloads the bf16-rounded values.
  {
    CausalLmImpl t(target_config(c.qwen3));
    t.init_weights(0.3, 5);
    export_hf(t, root_ / "target", ExportOptions{});
  }
  auto target = load_hf_model(root_ / "target");

  DrafterShapeOptions shape;
  shape.kind = c.kind;
  shape.block_size = 5;
  shape.layers = 2;
  shape.aux_layer_ids = {1, 3};
  shape.mask_token_id = 2;
  shape.markov_rank = 8;
  shape.markov_context_size = c.markov_context_size;
  shape.verifier_name_or_path = (root_ / "target").string();
  auto drafter = make_drafter(make_drafter_config(target->config(), shape), *target, 0.3, 9);
  for (auto& item : drafter->named_parameters()) {  // non-trivial norms / heads / biases
    const std::string& name = item.key();
    if (name.find("norm") != std::string::npos) item.value().uniform_(0.5, 1.5);
    if (name.find("markov_w2") != std::string::npos || name.find("context_out") != std::string::npos ||
        name.find("bias") != std::string::npos)
      item.value().normal_(0.0, 0.5);
  }
  const DrafterConfig& dc = drafter->config();
  DrafterExportOptions ex;
  ex.dtype = DType::kF32;
  export_drafter(*drafter, root_ / "drafter", ex);
  std::vector<float> temps;
  if (dc.enable_confidence_head) {
    for (int j = 0; j < dc.num_drafts(); ++j) temps.push_back(0.5f + 0.25f * static_cast<float>(j));
    write_confidence_calibration(root_ / "drafter", temps);
  }

  // One sequence of n tokens: the anchor is the last one, context = positions 0..n−2.
  const int64_t n = 13, d = dc.num_drafts(), v = dc.layer.vocab_size, h = dc.layer.hidden_size;
  std::vector<int32_t> tokens(n);
  for (int64_t i = 0; i < n; ++i) tokens[i] = static_cast<int32_t>(3 + (i * 17 + 5) % (v - 3));
  auto ids = at::tensor(std::vector<int64_t>(tokens.begin(), tokens.end()), at::kLong).view({1, n});
  const auto layers = drafter->capture_layers();
  const ForwardOutput out = target->forward(ids, layers);
  std::vector<torch::Tensor> hs;
  for (const auto& x : out.hidden_states) hs.push_back(x);
  auto ctx = drafter->context(at::cat(hs, -1));
  auto anchors = at::full({1, 1}, n - 1, at::TensorOptions().dtype(at::kLong));
  auto states = drafter->block_states(ctx, ids, anchors);  // [1, 1, γ, H]
  auto hd = drafter->drafting_states(states).view({d, h});

  // Engine side on the same hidden states.
  DSparkProposerOptions po;
  po.max_running = 1;
  po.max_model_len = 64;
  po.compute = DType::kF32;
  po.keep_base_logits = true;
  auto proposer = DSparkProposer::load(root_ / "drafter", root_ / "target", po);
  const int64_t ht = dc.target_hidden_size;
  std::vector<float> packed;  // [k][n−1][H_t]
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
  proposer->observe({&committed, 1});
  SamplingParams greedy;
  greedy.temperature = 0;
  DraftRequest request{0, tokens, &greedy, nullptr, static_cast<int32_t>(d)};
  Draft draft;
  proposer->propose({&request, 1}, {&draft, 1});
  ASSERT_EQ(static_cast<int64_t>(draft.tokens.size()), d);
  const auto got = proposer->inspect(0);

  // Trainer side with the engine's drafted previous tokens.
  std::vector<int64_t> prev = {tokens.back()};
  for (int64_t j = 0; j + 1 < d; ++j) prev.push_back(draft.tokens[j]);
  auto prev_t = at::tensor(prev, at::kLong);
  const auto u = to_floats(drafter->base_logits(hd));
  const auto logits = to_floats(drafter->draft_logits(hd, prev_t));
  const double err_hidden = max_diff(got.hidden, to_floats(states.view({dc.block_size, h})));
  const double err_base = max_diff(got.base_logits, u);
  const double err_logits = max_diff(got.logits, logits);
  std::printf("max |diff|: block states %.3g, base logits %.3g, logits %.3g\n", err_hidden, err_base, err_logits);
  EXPECT_LT(err_hidden, 1e-4);
  EXPECT_LT(err_base, 1e-3);
  EXPECT_LT(err_logits, 1e-3);
  for (int64_t j = 0; j < d; ++j) {
    const float* row = logits.data() + j * v;
    const int32_t best = argmax(row, v);
    std::vector<float> sorted(row, row + v);
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
    if (sorted[0] - sorted[1] > 2e-3) EXPECT_EQ(draft.tokens[j], best) << "draft " << j + 1;
  }
  if (dc.enable_confidence_head) {
    const auto z = to_floats(drafter->confidence_logits(hd, prev_t));
    EXPECT_LT(max_diff(got.confidence_logits, z), 1e-4);
    ASSERT_NE(draft.confidence, nullptr);
    for (int64_t j = 0; j < d; ++j) {
      const double cj = 1.0 / (1.0 + std::exp(-z[j] / temps[j]));
      EXPECT_NEAR(draft.confidence[j], cj, 1e-4) << "c_" << j + 1;
    }
  } else {
    EXPECT_EQ(draft.confidence, nullptr);
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, DrafterParityTest,
                         ::testing::Values(Case{false, DrafterKind::kDSpark}, Case{true, DrafterKind::kDSpark},
                                           Case{true, DrafterKind::kDFlash}, Case{true, DrafterKind::kDSpark, 16}),
                         [](const auto& info) {
                           return std::string(info.param.qwen3 ? "Qwen3" : "Llama") +
                                  (info.param.kind == DrafterKind::kDSpark ? "DSpark" : "DFlash") +
                                  (info.param.markov_context_size > 0 ? "ContextualMarkov" : "");
                         });

TEST(DrafterExportTest, Bf16ExportLoadsAndConfigRoundTrips) {
  const fs::path root = fs::temp_directory_path() / ("dspark_drafter_export_" + std::to_string(::getpid()));
  fs::remove_all(root);
  {
    CausalLmImpl t(target_config(false));
    t.init_weights(0.3, 1);
    export_hf(t, root / "target", ExportOptions{});
  }
  auto target = load_hf_model(root / "target");
  DrafterShapeOptions shape;
  shape.mask_token_id = 2;
  shape.block_size = 4;
  shape.markov_rank = 4;
  const DrafterConfig config = make_drafter_config(target->config(), shape);
  // Default aux ids (speculators convention: id k = output of decoder layer k−1): spread over
  // output-of-layer 1 .. L−3 like the reference drafters; DeepSpec's Qwen3-4B choice
  // [1, 9, 17, 25, 33] is [2, 10, 18, 26, 34] here.
  EXPECT_EQ(config.aux_hidden_state_layer_ids, (std::vector<int32_t>{2}));
  EXPECT_EQ(default_aux_layer_ids(8, 3), (std::vector<int32_t>{2, 4, 6}));
  EXPECT_EQ(default_aux_layer_ids(36, 5), (std::vector<int32_t>{2, 10, 18, 26, 34}));
  EXPECT_EQ(config.capture_layers(), (std::vector<int32_t>{1}));
  auto drafter = make_drafter(config, *target, 0.02, 3);
  export_drafter(*drafter, root / "drafter", DrafterExportOptions{});
  const DrafterConfig back = DrafterConfig::from_file(root / "drafter");
  EXPECT_EQ(back.aux_hidden_state_layer_ids, config.aux_hidden_state_layer_ids);
  EXPECT_EQ(back.markov_rank, 4);
  EXPECT_TRUE(back.confidence_head_with_markov);
  EXPECT_EQ(back.layer.torch_dtype, "bfloat16");
  DSparkProposerOptions po;
  po.max_model_len = 64;
  EXPECT_NO_THROW(DSparkProposer::load(root / "drafter", root / "target", po));
  // A reload through the trainer gives the bf16-rounded weights back.
  auto reloaded = load_drafter(root / "drafter", *target);
  for (const auto& item : drafter->named_parameters()) {
    auto a = item.value().to(at::kBFloat16).to(at::kFloat);
    auto b = reloaded->named_parameters()[item.key()];
    EXPECT_TRUE(at::equal(a, b)) << item.key();
  }
  // With a greedy vocabulary added the engine loads it and the trainer drops it (rows of the
  // trained tensors, they would go stale); a reduced vocabulary is refused by the trainer.
  const std::vector<int32_t> kept = {3, 7, 11, 20, 21};
  write_draft_vocab(root / "drafter", root / "target", kept, DraftVocabUse::kGreedyRequests, root / "greedy");
  EXPECT_NO_THROW(DSparkProposer::load(root / "greedy", root / "target", po));
  auto from_greedy = load_drafter(root / "greedy", *target);
  EXPECT_EQ(from_greedy->config().greedy_draft_vocab_size, 0);
  for (const auto& item : reloaded->named_parameters()) {
    EXPECT_TRUE(at::equal(item.value(), from_greedy->named_parameters()[item.key()])) << item.key();
  }
  write_draft_vocab(root / "drafter", root / "target", kept, DraftVocabUse::kEveryRequest, root / "reduced");
  EXPECT_NO_THROW(DSparkProposer::load(root / "reduced", root / "target", po));
  try {
    load_drafter(root / "reduced", *target);
    ADD_FAILURE() << "the trainer loaded a reduced-vocabulary drafter";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has a reduced draft vocabulary (5 of"), std::string::npos) << e.what();
  }
  fs::remove_all(root);
}

}  // namespace
}  // namespace dspark::train
