// AdamW against libtorch's own torch::optim::AdamW (same update, decay on every matrix),
// state save/restore, gradient clipping, and the warm-up + cosine schedule.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/optim/adamw.h>

#include "train/pretrain/adamw.h"
#include "train/pretrain/schedule.h"

namespace dspark::train {
namespace {

torch::Tensor loss_of(const torch::Tensor& w, const torch::Tensor& x) { return (x.matmul(w).sin() * x.sum()).pow(2).mean(); }

TEST(AdamWTest, MatchesTorchAdamWOnMatrices) {
  at::manual_seed(0);
  auto x = torch::randn({6, 5});
  auto w_ref = torch::randn({5, 4}).requires_grad_(true);
  auto w_own = w_ref.detach().clone().requires_grad_(true);
  torch::optim::AdamW reference({w_ref}, torch::optim::AdamWOptions(0.01).betas({0.9, 0.95}).eps(1e-8).weight_decay(0.1));
  AdamW own({{"w", w_own}}, AdamWOptions{0.9, 0.95, 1e-8, 0.1});
  for (int step = 0; step < 20; ++step) {
    reference.zero_grad();
    loss_of(w_ref, x).backward();
    reference.step();
    own.zero_grad();
    loss_of(w_own, x).backward();
    own.step(0.01);
  }
  EXPECT_TRUE(torch::allclose(w_own, w_ref, 1e-6, 1e-6)) << (w_own - w_ref).abs().max().item<float>();
  EXPECT_EQ(own.num_steps(), 20);
}

TEST(AdamWTest, VectorsAreNotDecayed) {
  auto v = torch::ones({3}).requires_grad_(true);
  AdamW opt({{"v", v}}, AdamWOptions{0.9, 0.95, 1e-8, 0.5});
  v.mutable_grad() = torch::zeros({3});
  opt.step(0.1);
  EXPECT_TRUE(torch::equal(v, torch::ones({3})));  // zero gradient, no decay: unchanged
}

TEST(AdamWTest, StateRoundTripContinuesIdentically) {
  at::manual_seed(1);
  auto x = torch::randn({6, 5});
  auto w1 = torch::randn({5, 4}).requires_grad_(true);
  AdamW a({{"w", w1}}, AdamWOptions{});
  for (int i = 0; i < 3; ++i) {
    a.zero_grad();
    loss_of(w1, x).backward();
    a.step(0.01);
  }
  auto w2 = w1.detach().clone().requires_grad_(true);
  AdamW b({{"w", w2}}, AdamWOptions{});
  std::map<std::string, torch::Tensor> state;
  for (auto& [name, t] : a.state()) state[name] = t.clone();
  b.load_state(state, a.num_steps());
  for (int i = 0; i < 3; ++i) {
    for (auto* pair : {&a, &b}) pair->zero_grad();
    loss_of(w1, x).backward();
    loss_of(w2, x).backward();
    a.step(0.01);
    b.step(0.01);
  }
  EXPECT_TRUE(torch::equal(w1, w2));
  state.erase("exp_avg.w");
  EXPECT_THROW(b.load_state(state, 3), std::exception);
}

TEST(AdamWTest, AScaledParameterMovesAtItsOwnRateDecayIncluded) {
  // Three copies of one parameter with the same gradients: scales 1, 2.5 and (not selected) 1.
  // Each equals a torch AdamW run at lr × its scale.
  at::manual_seed(2);
  auto x = torch::randn({6, 5});
  auto init = torch::randn({5, 4});
  std::vector<torch::Tensor> w;
  for (int i = 0; i < 3; ++i) w.push_back(init.clone().requires_grad_(true));
  AdamW own({{"layers.0.w", w[0]}, {"layers.1.w", w[1]}, {"fc.w", w[2]}}, AdamWOptions{0.9, 0.95, 1e-8, 0.1});
  EXPECT_EQ(own.scale_lr([](const std::string& name) { return name == "layers.1.w"; }, 2.5), 1);
  EXPECT_THROW(own.scale_lr([](const std::string&) { return true; }, 0.0), std::exception);
  auto ref = init.clone().requires_grad_(true);
  torch::optim::AdamW reference({ref}, torch::optim::AdamWOptions(0.025).betas({0.9, 0.95}).eps(1e-8).weight_decay(0.1));
  for (int step = 0; step < 10; ++step) {
    own.zero_grad();
    for (auto& t : w) loss_of(t, x).backward();
    own.step(0.01);
    reference.zero_grad();
    loss_of(ref, x).backward();
    reference.step();
  }
  EXPECT_TRUE(torch::equal(w[0], w[2]));
  EXPECT_FALSE(torch::allclose(w[0], w[1], 1e-3, 1e-3));
  EXPECT_TRUE(torch::allclose(w[1], ref, 1e-6, 1e-6)) << (w[1] - ref).abs().max().item<float>();
}

TEST(AdamWTest, ClipGradNormScalesToTheLimit) {
  auto p = torch::zeros({2, 2}).requires_grad_(true);
  AdamW opt({{"p", p}}, AdamWOptions{});
  p.mutable_grad() = torch::full({2, 2}, 3.0);  // norm 6
  EXPECT_NEAR(opt.clip_grad_norm(1.5), 6.0, 1e-6);
  EXPECT_NEAR(p.grad().norm().item<double>(), 1.5, 1e-5);
  EXPECT_NEAR(opt.clip_grad_norm(10.0), 1.5, 1e-5);  // below the limit: untouched
  EXPECT_NEAR(p.grad().norm().item<double>(), 1.5, 1e-5);
}

TEST(CosineScheduleTest, WarmupThenCosineToMinimum) {
  const CosineSchedule s{1e-3, 1e-4, 10, 110};
  EXPECT_DOUBLE_EQ(s.lr_at(1), 1e-4);
  EXPECT_DOUBLE_EQ(s.lr_at(5), 5e-4);
  EXPECT_DOUBLE_EQ(s.lr_at(10), 1e-3);
  EXPECT_NEAR(s.lr_at(60), 0.5 * (1e-3 + 1e-4), 1e-12);  // half-way through the cosine
  EXPECT_DOUBLE_EQ(s.lr_at(110), 1e-4);
  EXPECT_DOUBLE_EQ(s.lr_at(500), 1e-4);
  for (int64_t step = 11; step < 110; ++step) EXPECT_LE(s.lr_at(step + 1), s.lr_at(step));
}

}  // namespace
}  // namespace dspark::train
