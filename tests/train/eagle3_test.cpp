// The EAGLE-3 drafter module (train/draft/eagle3.h) on small random weights, in f32:
// - the training-time test's step s output at row i is a from-scratch causal recomputation
//   of that chain (context rows 0..i, then one row per earlier step with the tokens ttt fed);
// - draft() (the engine's drafting) agrees with context_logits at its first draft and with
//   the training-time test after it; chains after different rows of one context agree with
//   draft() on the truncated sequences;
// - the draft vocabulary (most frequent, ties by id, d2t / t2d) and the loss (forward KL on
//   the draft vocabulary, masks, decay, accuracies).
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "spec/eagle3_config.h"
#include "train/draft/eagle3.h"
#include "train/draft/eagle3_io.h"
#include "train/draft/eagle3_loss.h"
#include "train/draft/draft_vocab_choice.h"

namespace dspark::train {
namespace {

ModelConfig small_target(ModelType type) {
  ModelConfig c;
  c.model_type = type;
  c.model_type_name = type == ModelType::kQwen3 ? "qwen3" : "llama";
  c.vocab_size = 64;
  c.hidden_size = 16;
  c.intermediate_size = 24;
  c.num_hidden_layers = 4;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 4;
  c.max_position_embeddings = 128;
  c.rms_norm_eps = 1e-5f;
  c.qk_norm = type == ModelType::kQwen3;
  // llama with biases exercises the bias parameters too
  c.attention_bias = type == ModelType::kLlama;
  c.attention_output_bias = type == ModelType::kLlama;
  return c;
}

struct Fixture {
  std::shared_ptr<Eagle3Impl> drafter;
  torch::Tensor aux;  // [B, T, 3·H]
  torch::Tensor ids;  // [B, T]
};

Fixture make_fixture(ModelType type, uint64_t seed) {
  const ModelConfig target = small_target(type);
  Eagle3ShapeOptions shape;
  shape.aux_layer_ids = {1, 2, 4};
  shape.draft_vocab_size = 24;
  const Eagle3Config config = make_eagle3_config(target, shape);
  at::manual_seed(static_cast<int64_t>(seed));
  Fixture f;
  f.drafter = std::make_shared<Eagle3Impl>(config, at::randn({target.vocab_size, target.hidden_size}));
  f.drafter->init_weights(0.4, seed);
  {
    at::NoGradGuard no_grad;
    for (auto& p : f.drafter->parameters()) p.add_(at::randn_like(p) * 0.1);  // norms and biases off 1 / 0
  }
  std::vector<int64_t> counts(static_cast<size_t>(target.vocab_size));
  for (size_t t = 0; t < counts.size(); ++t) counts[t] = static_cast<int64_t>((t * 37) % 11);
  f.drafter->set_draft_vocab(build_draft_vocab(counts, shape.draft_vocab_size));
  f.drafter->eval();
  f.aux = at::randn({2, 9, 3 * target.hidden_size});
  f.ids = at::randint(0, target.vocab_size, {2, 9}, at::TensorOptions().dtype(at::kLong));
  return f;
}

void expect_close(const torch::Tensor& a, const torch::Tensor& b, const std::string& what, double tol = 2e-5) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  const double diff = (a.to(at::kFloat) - b.to(at::kFloat)).abs().max().item<double>();
  EXPECT_LT(diff, tol) << what;
}

// Chain (b, i) at step s recomputed from scratch through rows(): the context rows 0..i of
// sequence b (plain causal), then one row per step 1..s with the token ttt fed and the
// previous row's output. -> [V_d]
torch::Tensor recompute_chain(const Eagle3Impl& m, const Fixture& f, const Eagle3Ttt& ttt, int64_t b, int64_t i,
                              int64_t s) {
  const auto longs = at::TensorOptions().dtype(at::kLong);
  Eagle3KvCache cache;
  Eagle3Rows out = m.rows(ttt.tokens[0].narrow(0, b, 1).narrow(1, 0, i + 1),
                          m.features(f.aux.narrow(0, b, 1).narrow(1, 0, i + 1)), at::arange(i + 1, longs).view({1, -1}),
                          cache);
  auto r = out.r.narrow(1, i, 1);
  auto logits = out.logits.narrow(1, i, 1);
  for (int64_t step = 1; step <= s; ++step) {
    out = m.rows(ttt.tokens[static_cast<size_t>(step)].index({b, i}).view({1, 1}), r, at::full({1, 1}, i + step, longs),
                 cache);
    r = out.r;
    logits = out.logits;
  }
  return logits.reshape({-1});
}

class Eagle3ModuleTest : public ::testing::TestWithParam<ModelType> {};

TEST_P(Eagle3ModuleTest, TrainingTimeTestStepsAreTheirChainsRecomputedCausally) {
  at::NoGradGuard no_grad;
  const Fixture f = make_fixture(GetParam(), 3);
  const Eagle3Impl& m = *f.drafter;
  const int64_t steps = 4;
  const Eagle3Ttt ttt = m.ttt(f.aux, f.ids, steps);
  ASSERT_EQ(ttt.logits.size(), 4u);
  ASSERT_EQ(ttt.tokens.size(), 4u);
  EXPECT_EQ(ttt.logits[0].sizes(), (std::vector<int64_t>{2, 9, 24}));
  // Step 0 feeds t_{i+1}; step s the token drafted at step s−1, as a target id.
  EXPECT_TRUE(ttt.tokens[0].narrow(1, 0, 8).equal(f.ids.narrow(1, 1, 8)));
  for (int64_t s = 1; s < steps; ++s)
    EXPECT_TRUE(ttt.tokens[s].equal(m.to_target_ids(ttt.logits[s - 1].argmax(-1)))) << "step " << s;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 9; ++i)
      for (int64_t s = 0; s < steps; ++s)
        expect_close(ttt.logits[s].index({b, i}), recompute_chain(m, f, ttt, b, i, s),
                     "b " + std::to_string(b) + " row " + std::to_string(i) + " step " + std::to_string(s));
}

TEST_P(Eagle3ModuleTest, DraftAgreesWithContextLogitsAndTheTrainingTimeTest) {
  at::NoGradGuard no_grad;
  const Fixture f = make_fixture(GetParam(), 5);
  const Eagle3Impl& m = *f.drafter;
  const int64_t n = 7, k = 4;
  const auto aux = f.aux.narrow(1, 0, n), ids = f.ids.narrow(1, 0, n);
  const Eagle3Drafts d = m.draft(aux, ids, k);
  ASSERT_EQ(d.tokens.sizes(), (std::vector<int64_t>{2, k}));
  ASSERT_EQ(d.logits.sizes(), (std::vector<int64_t>{2, k, 64}));
  // Draft 1 is the last context row's (position n−2), also within a longer sequence.
  expect_close(d.draft_logits.select(1, 0), m.context_logits(f.aux, f.ids).select(1, n - 2), "draft 1");
  // Drafts 2.. are the training-time test's steps at that row.
  const Eagle3Ttt ttt = m.ttt(aux, ids, k);
  for (int64_t s = 0; s < k; ++s) {
    expect_close(d.draft_logits.select(1, s), ttt.logits[s].select(1, n - 2), "draft " + std::to_string(s + 1));
    if (s > 0) {
      EXPECT_TRUE(d.tokens.select(1, s - 1).equal(ttt.tokens[s].select(1, n - 2))) << s;
    }
  }
  // Target-vocab logits: the draft logits at their target ids, −inf elsewhere.
  const auto ids_of_vocab = m.vocab_target_ids();
  EXPECT_TRUE(d.logits.index_select(2, ids_of_vocab).equal(d.draft_logits));
  const auto off = m.t2d().logical_not().nonzero().view({-1});
  EXPECT_TRUE(d.logits.index_select(2, off).eq(-std::numeric_limits<float>::infinity()).all().item<bool>());
  EXPECT_TRUE(d.logits.argmax(-1).equal(d.tokens));
}

TEST_P(Eagle3ModuleTest, ChainsAfterDifferentRowsOfOneContextAreDraftsOfTheirPrefixes) {
  at::NoGradGuard no_grad;
  const Fixture f = make_fixture(GetParam(), 7);
  const Eagle3Impl& m = *f.drafter;
  const auto longs = at::TensorOptions().dtype(at::kLong);
  const Eagle3Context context = m.context(f.aux, f.ids);  // rows 0..7
  const std::vector<int64_t> seq{0, 1, 0, 1}, last{0, 3, 7, 7};
  const Eagle3Drafts chains =
      m.draft_chains(context, torch::tensor(seq, longs), torch::tensor(last, longs), 3);
  for (size_t c = 0; c < seq.size(); ++c) {
    const int64_t n = last[c] + 2;
    const Eagle3Drafts alone = m.draft(f.aux.narrow(0, seq[c], 1).narrow(1, 0, n),
                                       f.ids.narrow(0, seq[c], 1).narrow(1, 0, n), 3);
    expect_close(chains.draft_logits.select(0, static_cast<int64_t>(c)), alone.draft_logits.select(0, 0),
                 "chain " + std::to_string(c));
    EXPECT_TRUE(chains.tokens.select(0, static_cast<int64_t>(c)).equal(alone.tokens.select(0, 0))) << c;
  }
}

TEST_P(Eagle3ModuleTest, GradientsReachEveryParameterThroughTheSteps) {
  const Fixture f = make_fixture(GetParam(), 9);
  const Eagle3Ttt ttt = f.drafter->ttt(f.aux, f.ids, 3);
  EXPECT_FALSE(ttt.tokens[1].requires_grad());
  // Only step 2's logits: fc and the step-0 keys are reached through the chain.
  ttt.logits[2].pow(2).mean().backward();
  for (const auto& item : f.drafter->named_parameters()) {
    ASSERT_TRUE(item.value().grad().defined()) << item.key();
    EXPECT_GT(item.value().grad().abs().sum().item<double>(), 0.0) << item.key();
  }
}

INSTANTIATE_TEST_SUITE_P(LlamaAndQwen3, Eagle3ModuleTest, ::testing::Values(ModelType::kLlama, ModelType::kQwen3),
                         [](const auto& info) { return info.param == ModelType::kQwen3 ? "qwen3" : "llama"; });

TEST(Eagle3NamesTest, ParametersAndBuffersHaveTheSpeculatorsNames) {
  const Fixture f = make_fixture(ModelType::kQwen3, 1);
  std::vector<std::string> names;
  for (const auto& item : f.drafter->named_parameters()) names.push_back(item.key());
  const std::vector<std::string> expected = {
      "fc.weight",
      "layers.0.input_layernorm.weight",
      "layers.0.hidden_norm.weight",
      "layers.0.self_attn.q_proj.weight",
      "layers.0.self_attn.k_proj.weight",
      "layers.0.self_attn.v_proj.weight",
      "layers.0.self_attn.o_proj.weight",
      "layers.0.self_attn.q_norm.weight",
      "layers.0.self_attn.k_norm.weight",
      "layers.0.post_attention_layernorm.weight",
      "layers.0.mlp.gate_proj.weight",
      "layers.0.mlp.up_proj.weight",
      "layers.0.mlp.down_proj.weight",
      "norm.weight",
      "lm_head.weight",
  };
  EXPECT_EQ(names, expected);
  auto params = f.drafter->named_parameters();
  EXPECT_EQ(params["fc.weight"].sizes(), (std::vector<int64_t>{16, 48}));
  EXPECT_EQ(params["layers.0.self_attn.q_proj.weight"].sizes(), (std::vector<int64_t>{16, 32}));
  EXPECT_EQ(params["layers.0.self_attn.k_proj.weight"].sizes(), (std::vector<int64_t>{8, 32}));
  EXPECT_EQ(params["lm_head.weight"].sizes(), (std::vector<int64_t>{24, 16}));
  auto buffers = f.drafter->named_buffers();
  EXPECT_EQ(buffers["d2t"].scalar_type(), at::kLong);
  EXPECT_EQ(buffers["d2t"].sizes(), (std::vector<int64_t>{24}));
  EXPECT_EQ(buffers["t2d"].scalar_type(), at::kBool);
  EXPECT_EQ(buffers["t2d"].sizes(), (std::vector<int64_t>{64}));
}

TEST(Eagle3VocabTest, MostFrequentTokensTiesByIdSortedById) {
  //                              id: 0  1  2  3  4  5  6  7
  const std::vector<int64_t> counts{5, 0, 9, 5, 1, 5, 9, 0};
  const DraftVocab v = build_draft_vocab(counts, 4);
  // 2 and 6 (9 each), then of the 5s the lowest ids 0 and 3 (5 loses the tie).
  EXPECT_EQ(v.target_ids, (std::vector<int64_t>{0, 2, 3, 6}));
  EXPECT_EQ(v.d2t, (std::vector<int64_t>{0, 1, 1, 3}));
  EXPECT_EQ(v.t2d, (std::vector<uint8_t>{1, 0, 1, 1, 0, 0, 1, 0}));
  for (int64_t d = 0; d < v.size(); ++d) EXPECT_EQ(d + v.d2t[static_cast<size_t>(d)], v.target_ids[static_cast<size_t>(d)]);
  EXPECT_EQ(build_draft_vocab(counts, 6).target_ids, (std::vector<int64_t>{0, 2, 3, 4, 5, 6}));
  // Fewer distinct tokens than slots: the unused lowest ids fill up.
  EXPECT_EQ(build_draft_vocab(counts, 7).target_ids, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(build_draft_vocab(counts, 8).d2t, std::vector<int64_t>(8, 0));
  EXPECT_THROW(build_draft_vocab(counts, 9), std::exception);
  EXPECT_THROW(build_draft_vocab(counts, 0), std::exception);

  const DraftVocab back = draft_vocab_from_d2t(v.d2t, 8);
  EXPECT_EQ(back.target_ids, v.target_ids);
  EXPECT_EQ(back.t2d, v.t2d);
  EXPECT_THROW(draft_vocab_from_d2t(std::vector<int64_t>{0, 7}, 8), std::exception);     // id 8: out of range
  EXPECT_THROW(draft_vocab_from_d2t(std::vector<int64_t>{1, 0}, 8), std::exception);     // id 1 twice

  // The module maps through it.
  const Fixture f = make_fixture(ModelType::kLlama, 2);
  Eagle3Impl& m = *f.drafter;
  const DraftVocab mv = m.draft_vocab();
  const auto longs = at::TensorOptions().dtype(at::kLong);
  const auto draft_ids = torch::tensor(std::vector<int64_t>{0, 5, 23}, longs);
  const auto target_ids = m.to_target_ids(draft_ids);
  for (int64_t j = 0; j < 3; ++j)
    EXPECT_EQ(target_ids[j].item<int64_t>(), mv.target_ids[static_cast<size_t>(draft_ids[j].item<int64_t>())]);
  EXPECT_EQ(m.t2d().sum().item<int64_t>(), 24);
}

TEST(Eagle3LossTest, ZeroForTheTargetsOwnDistributionAndMaskedAsDocumented) {
  const int64_t b = 2, t = 10, v = 32, steps = 3;
  const auto longs = at::TensorOptions().dtype(at::kLong);
  std::vector<int64_t> counts(v, 0);
  for (int64_t i = 0; i < v; i += 2) counts[static_cast<size_t>(i)] = 1;
  const DraftVocab vocab = build_draft_vocab(counts, 16);  // the even ids
  const auto vocab_ids = torch::tensor(vocab.target_ids, longs);
  at::manual_seed(4);
  auto target = at::randn({b, t, v});
  target.index_fill_(2, vocab_ids.narrow(0, 3, 1), 8.0);  // the greedy token (id 6) is in the vocabulary
  auto loss_mask = at::ones({b, t}, at::TensorOptions().dtype(at::kBool));
  loss_mask.narrow(1, 0, 3).fill_(false);  // a 3-token prompt
  loss_mask[1].narrow(0, 8, 2).fill_(false);  // padding at the end of row 1

  // Step s row i predicts t_{i+2+s}: its target distribution is the target's row i+1+s.
  std::vector<torch::Tensor> exact;
  for (int64_t s = 0; s < steps; ++s) {
    auto logits = at::zeros({b, t, 16});
    logits.narrow(1, 0, t - 1 - s).copy_(target.narrow(1, 1 + s, t - 1 - s).index_select(2, vocab_ids));
    exact.push_back(logits);
  }
  const Eagle3Loss l = eagle3_loss(exact, target, loss_mask, vocab_ids, Eagle3LossOptions{0.5});
  EXPECT_NEAR(l.total.item<double>(), 0.0, 1e-5);
  ASSERT_EQ(l.accuracy.size(), 3u);
  for (int64_t s = 0; s < steps; ++s) {
    EXPECT_NEAR(l.kl[s], 0.0, 1e-5);
    EXPECT_DOUBLE_EQ(l.accuracy[s], 1.0);
    EXPECT_DOUBLE_EQ(l.conditional[s], 1.0);
  }
  // Rows i with t_{i+1} a completion token and t_{i+2+s} one inside the sequence:
  // row 0: i in 2..7−s; row 1: i in 2..5−s.
  EXPECT_EQ(l.rows, (std::vector<double>{6 + 4, 5 + 3, 4 + 2}));
  const auto mask1 = eagle3_step_mask(loss_mask, 1);
  EXPECT_EQ(mask1.sizes(), (std::vector<int64_t>{2, 7}));
  EXPECT_FALSE(mask1[0][1].item<bool>());
  EXPECT_TRUE(mask1[0][2].item<bool>());
  EXPECT_TRUE(mask1[1][4].item<bool>());
  EXPECT_FALSE(mask1[1][5].item<bool>());

  // Uniform drafter logits: KL_s > 0, weighted by decay^s; step 0 wrong -> conditional 0 after.
  std::vector<torch::Tensor> flat(steps, at::zeros({b, t, 16}));
  flat[1] = exact[1];
  const Eagle3Loss u = eagle3_loss(flat, target, loss_mask, vocab_ids, Eagle3LossOptions{0.5});
  EXPECT_GT(u.kl[0], 0.1);
  EXPECT_NEAR(u.kl[1], 0.0, 1e-5);
  EXPECT_NEAR(u.total.item<double>(), u.kl[0] + 0.25 * u.kl[2], 1e-4);
  EXPECT_DOUBLE_EQ(u.accuracy[0], 0.0);  // argmax of a flat row is draft id 0 (target 0), not 6
  EXPECT_DOUBLE_EQ(u.accuracy[1], 1.0);
  EXPECT_DOUBLE_EQ(u.conditional[1], 0.0);
}

}  // namespace
}  // namespace dspark::train
