// Pretraining of a tiny model on synthetic shards: the loss falls, and a run stopped at step
// k and resumed from its checkpoint reproduces an uninterrupted run's losses bit for bit.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "train/checkpoint.h"
#include "train/pretrain/pretrain.h"
#include "train/synthetic_shards.h"

namespace dspark::train {
namespace {

namespace fs = std::filesystem;

class PretrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("dspark_pretrain_test_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
             "_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    testing::write_synthetic_shards(root_ / "shards");
  }
  void TearDown() override { fs::remove_all(root_); }

  PretrainOptions tiny(const std::string& run) const {
    PretrainOptions o;
    o.data = root_ / "shards";
    o.out = root_ / run;
    o.mix = "alpha=0.5,beta=0.5";
    o.hidden = 32;
    o.layers = 2;
    o.heads = 4;
    o.kv_heads = 2;
    o.ffn = 64;
    o.max_seq = 64;
    o.batch = 4;
    o.seq_len = 32;
    o.steps = 12;
    o.warmup = 3;
    o.lr = 3e-3;
    o.min_lr = 3e-4;
    o.threads = 1;
    o.log_every = 4;
    o.eval_every = 6;
    o.eval_windows = 4;
    o.save_every = 0;
    o.export_at_end = false;
    o.quiet = true;
    return o;
  }

  fs::path root_;
};

TEST_F(PretrainTest, LossDecreases) {
  PretrainOptions o = tiny("run");
  o.steps = 60;
  o.warmup = 5;
  o.eval_every = 30;
  const PretrainResult r = run_pretrain(o);
  ASSERT_EQ(r.losses.size(), 60u);
  EXPECT_EQ(r.first_step, 1);
  EXPECT_EQ(r.last_step, 60);
  EXPECT_FALSE(r.interrupted);
  // Untrained loss is about ln(300) = 5.7; the synthetic runs are easy to learn.
  EXPECT_NEAR(r.losses.front(), std::log(300.0), 0.5);
  const double last = std::accumulate(r.losses.end() - 5, r.losses.end(), 0.0) / 5;
  EXPECT_LT(last, r.losses.front() - 1.0);
  ASSERT_EQ(r.val_losses.size(), 2u);  // step 30 and the end
  EXPECT_LT(r.val_losses[1], r.val_losses[0]);
  EXPECT_TRUE(fs::exists(o.out / "train.log"));
  EXPECT_TRUE(fs::exists(o.out / "metrics.jsonl"));
  EXPECT_FALSE(find_checkpoint(o.out).empty());
}

TEST_F(PretrainTest, ResumedRunReproducesUninterruptedLossesExactly) {
  for (bool bf16 : {true, false}) {
    SCOPED_TRACE(bf16 ? "bf16 autocast" : "f32");
    PretrainOptions whole = tiny(bf16 ? "whole_bf16" : "whole_f32");
    whole.bf16 = bf16;
    whole.grad_accum = 2;
    const PretrainResult a = run_pretrain(whole);
    ASSERT_EQ(a.losses.size(), 12u);

    PretrainOptions parts = whole;
    parts.out = root_ / (bf16 ? "parts_bf16" : "parts_f32");
    parts.stop_after = 5;
    const PretrainResult b1 = run_pretrain(parts);
    EXPECT_TRUE(b1.interrupted);
    ASSERT_EQ(b1.losses.size(), 5u);
    const nlohmann::json state = read_checkpoint_state(find_checkpoint(parts.out));
    EXPECT_EQ(state["step"], 5);
    EXPECT_EQ(state["optimizer_steps"], 5);

    parts.stop_after = 0;
    const PretrainResult b2 = run_pretrain(parts);
    EXPECT_EQ(b2.first_step, 6);
    ASSERT_EQ(b2.losses.size(), 7u);
    for (size_t i = 0; i < 5; ++i) EXPECT_EQ(b1.losses[i], a.losses[i]) << "step " << i + 1;
    for (size_t i = 0; i < 7; ++i) EXPECT_EQ(b2.losses[i], a.losses[5 + i]) << "step " << 6 + i;
    EXPECT_TRUE(b1.val_losses.empty());
    EXPECT_EQ(b2.val_losses, a.val_losses);  // step 6 and the end both fall in the resumed part

    // A finished run resumed again does nothing.
    const PretrainResult b3 = run_pretrain(parts);
    EXPECT_TRUE(b3.losses.empty());
    EXPECT_EQ(b3.last_step, 12);
  }
}

TEST_F(PretrainTest, InitFromExportContinuesFromTheExportedWeights) {
  PretrainOptions o = tiny("first");
  o.export_at_end = true;
  run_pretrain(o);
  ASSERT_TRUE(fs::exists(o.out / "hf" / "model.safetensors"));
  ASSERT_TRUE(fs::exists(o.out / "hf" / "config.json"));

  PretrainOptions next = tiny("second");
  next.init_from = o.out / "hf";
  next.hidden = 48;  // ignored: the shape comes from the exported config
  next.steps = 2;
  next.warmup = 0;
  const PretrainResult r = run_pretrain(next);
  ASSERT_EQ(r.losses.size(), 2u);
  EXPECT_LT(r.losses[0], std::log(300.0) - 0.3);  // already trained, unlike a fresh start
}

TEST_F(PretrainTest, BadOptionsAreRejected) {
  PretrainOptions o = tiny("bad");
  o.mix = "alpha=0.5,gamma=0.5";
  EXPECT_THROW(run_pretrain(o), Error);
  o = tiny("bad");
  o.heads = 3;
  EXPECT_THROW(o.validate(), Error);
  o = tiny("bad");
  o.seq_len = 100000;  // longer than any source
  o.max_seq = 100000;
  EXPECT_THROW(run_pretrain(o), Error);
}

}  // namespace
}  // namespace dspark::train
