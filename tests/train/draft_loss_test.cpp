// Drafter supervision and loss on hand-made cases: block targets (labels, Markov previous
// tokens, target rows, validity at the sequence end and outside the completion), and the
// CE / TV / BCE terms with their position weights against values written out by hand.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "train/draft/draft_loss.h"

namespace dspark::train {
namespace {

torch::Tensor longs(std::vector<int64_t> v, std::vector<int64_t> shape) {
  return at::tensor(v, at::kLong).view(shape).clone();
}

TEST(BlockTargetsTest, LabelsPrevRowsAndValidity) {
  // Two sequences of T = 6; the first has a 2-token prompt, the second a 4-token prompt
  // and only 5 real tokens (position 5 is padding, not in the loss mask).
  auto ids = longs({10, 11, 12, 13, 14, 15, 20, 21, 22, 23, 24, 0}, {2, 6});
  auto mask = at::tensor(std::vector<int64_t>{0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0}, at::kLong).view({2, 6}).to(at::kBool);
  auto anchors = longs({2, 4, 3, 0}, {2, 2});
  auto keep = at::tensor(std::vector<int64_t>{1, 1, 1, 0}, at::kLong).view({2, 2}).to(at::kBool);
  const BlockTargets t = block_targets(ids, mask, anchors, keep, 3);
  // Sequence 0, anchor 2: labels 13 14 15, prev 12 13 14, rows 2 3 4, all valid.
  EXPECT_EQ(t.labels[0][0][0].item<int64_t>(), 13);
  EXPECT_EQ(t.labels[0][0][2].item<int64_t>(), 15);
  EXPECT_EQ(t.prev[0][0][0].item<int64_t>(), 12);
  EXPECT_EQ(t.prev[0][0][2].item<int64_t>(), 14);
  EXPECT_EQ(t.target_rows[0][0][1].item<int64_t>(), 3);
  for (int j = 0; j < 3; ++j) EXPECT_EQ(t.valid[0][0][j].item<float>(), 1.0f);
  // Anchor 4: only j = 1 (label at 5) exists; 6 and 7 are past the end.
  EXPECT_EQ(t.labels[0][1][0].item<int64_t>(), 15);
  EXPECT_EQ(t.valid[0][1][0].item<float>(), 1.0f);
  EXPECT_EQ(t.valid[0][1][1].item<float>(), 0.0f);
  EXPECT_EQ(t.valid[0][1][2].item<float>(), 0.0f);
  // Sequence 1, anchor 3: label 24 at 4 is supervised; position 5 is not (padding), and
  // nothing after an unsupervised position counts (contiguous prefix).
  EXPECT_EQ(t.prev[1][0][0].item<int64_t>(), 23);
  EXPECT_EQ(t.target_rows[1][0][0].item<int64_t>(), 6 + 3);
  EXPECT_EQ(t.valid[1][0][0].item<float>(), 1.0f);
  EXPECT_EQ(t.valid[1][0][1].item<float>(), 0.0f);
  EXPECT_EQ(t.valid[1][0][2].item<float>(), 0.0f);
  // A dummy anchor supervises nothing.
  for (int j = 0; j < 3; ++j) EXPECT_EQ(t.valid[1][1][j].item<float>(), 0.0f);
}

TEST(DraftLossTest, TermsMatchHandComputedValues) {
  // One block, D = 2, V = 3. q_j given as log-probabilities so softmax returns them.
  const std::vector<std::vector<double>> q = {{0.5, 0.3, 0.2}, {0.1, 0.6, 0.3}};
  const std::vector<std::vector<double>> p = {{0.7, 0.2, 0.1}, {0.2, 0.2, 0.6}};
  const std::vector<int64_t> label = {0, 2};
  const std::vector<double> z = {0.4, -1.2};
  std::vector<float> qlog, pv;
  for (int j = 0; j < 2; ++j)
    for (int v = 0; v < 3; ++v) {
      qlog.push_back(static_cast<float>(std::log(q[j][v])));
      pv.push_back(static_cast<float>(p[j][v]));
    }
  auto logits = at::tensor(qlog).view({1, 1, 2, 3});
  auto probs = at::tensor(pv).view({1, 1, 2, 3});
  auto labels = longs(label, {1, 1, 2});
  auto conf = at::tensor(std::vector<float>{0.4f, -1.2f}).view({1, 1, 2});
  auto valid = at::ones({1, 1, 2});
  DraftLossOptions o;  // 0.1 / 0.9 / 1.0, decay 4
  const DraftLoss loss = draft_loss(logits, probs, labels, conf, valid, o);

  const double w[2] = {1.0, std::exp(-1.0 / 4.0)};
  double ce = 0, tv = 0, bce = 0, ws = 0;
  for (int j = 0; j < 2; ++j) {
    double l1 = 0;
    for (int v = 0; v < 3; ++v) l1 += std::abs(q[j][v] - p[j][v]);
    const double tvj = 0.5 * l1, target = 1.0 - tvj;
    const double c = 1.0 / (1.0 + std::exp(-z[j]));
    ce += w[j] * -std::log(q[j][label[j]]);
    tv += w[j] * tvj;
    bce += w[j] * -(target * std::log(c) + (1 - target) * std::log(1 - c));
    ws += w[j];
    EXPECT_NEAR(loss.acceptance[0][0][j].item<float>(), target, 1e-6);
  }
  EXPECT_NEAR(loss.weight_sum, ws, 1e-6);
  EXPECT_NEAR(loss.ce, ce / ws, 1e-5);
  EXPECT_NEAR(loss.tv, tv / ws, 1e-6);
  EXPECT_NEAR(loss.confidence, bce / ws, 1e-5);
  EXPECT_NEAR(loss.total.item<double>(), (0.1 * ce + 0.9 * tv + 1.0 * bce) / ws, 1e-5);

  // Invalid positions carry no weight: dropping position 2 leaves position 1's terms.
  auto valid1 = at::tensor(std::vector<float>{1.0f, 0.0f}).view({1, 1, 2});
  const DraftLoss first = draft_loss(logits, probs, labels, conf, valid1, o);
  EXPECT_NEAR(first.ce, -std::log(0.5), 1e-5);
  EXPECT_NEAR(first.tv, 0.2, 1e-6);

  // The optional forward KL(p ‖ q), weighted like the other terms and added to the total.
  DraftLossOptions with_kl = o;
  with_kl.kl_weight = 0.5;
  const DraftLoss kl_loss = draft_loss(logits, probs, labels, conf, valid, with_kl);
  double kl = 0;
  for (int j = 0; j < 2; ++j)
    for (int v = 0; v < 3; ++v) kl += w[j] * p[j][v] * std::log(p[j][v] / q[j][v]);
  EXPECT_EQ(loss.kl, 0.0);
  EXPECT_NEAR(kl_loss.kl, kl / ws, 1e-5);
  EXPECT_NEAR(kl_loss.total.item<double>(), (0.1 * ce + 0.9 * tv + 1.0 * bce + 0.5 * kl) / ws, 1e-5);
}

TEST(DraftLossTest, ConfidenceTargetIsDetachedAndGradientsFlow) {
  auto logits = at::randn({2, 3, 4, 7}).set_requires_grad(true);
  auto probs = at::softmax(at::randn({2, 3, 4, 7}), -1);
  auto labels = at::randint(0, 7, {2, 3, 4}, at::TensorOptions().dtype(at::kLong));
  auto conf = at::randn({2, 3, 4}).set_requires_grad(true);
  auto valid = at::ones({2, 3, 4});
  DraftLossOptions only_conf;
  only_conf.ce_weight = 0;
  only_conf.tv_weight = 0;
  const DraftLoss loss = draft_loss(logits, probs, labels, conf, valid, only_conf);
  loss.total.backward();
  // BCE against a detached target: the draft logits get no gradient from it.
  EXPECT_FALSE(logits.grad().defined() && logits.grad().abs().sum().item<double>() > 0);
  EXPECT_GT(conf.grad().abs().sum().item<double>(), 0.0);

  // DFlash: CE only, no target probabilities needed.
  DraftLossOptions ce_only;
  ce_only.ce_weight = 1;
  ce_only.tv_weight = 0;
  ce_only.confidence_weight = 0;
  const DraftLoss ce = draft_loss(logits, {}, labels, {}, valid, ce_only);
  EXPECT_FALSE(ce.acceptance.defined());
  EXPECT_NEAR(ce.total.item<double>(), ce.ce, 1e-6);
}

TEST(DraftLossTest, PositionWeights) {
  auto w = position_weights(4, 4.0);
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(w[j].item<float>(), std::exp(-j / 4.0), 1e-7);
  auto u = position_weights(3, 0.0);
  for (int j = 0; j < 3; ++j) EXPECT_EQ(u[j].item<float>(), 1.0f);
}

}  // namespace
}  // namespace dspark::train
