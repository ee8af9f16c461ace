// MixtureSampler: windows are a pure function of (seed, step, index), sources are drawn in
// proportion to the weights, windows stay inside the data, validation windows are fixed and
// disjoint; --mix parsing errors.
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "core/check.h"
#include "data/token_shards.h"
#include "train/pretrain/mixture_sampler.h"
#include "train/synthetic_shards.h"

namespace dspark::train {
namespace {

namespace fs = std::filesystem;

class MixtureSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dspark_mixture_test_" + std::to_string(::getpid()));
    testing::SyntheticShardOptions o;
    o.sources = {"a", "b", "c"};
    o.val_tokens = 500;
    testing::write_synthetic_shards(dir_, o);
    shards_ = std::make_unique<TokenShards>(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::unique_ptr<TokenShards> shards_;
};

TEST(ParseMixtureTest, ParsesAndRejects) {
  auto m = parse_mixture("gsm8k=0.3, code=0.5,prose=0.2");
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[1].source, "code");
  EXPECT_DOUBLE_EQ(m[1].weight, 0.5);
  EXPECT_EQ(format_mixture(m), "gsm8k=0.3,code=0.5,prose=0.2");
  EXPECT_THROW(parse_mixture(""), Error);
  EXPECT_THROW(parse_mixture("a"), Error);
  EXPECT_THROW(parse_mixture("a=x"), Error);
  EXPECT_THROW(parse_mixture("a=-1"), Error);
  EXPECT_THROW(parse_mixture("a=1,a=2"), Error);
  EXPECT_THROW(parse_mixture("a=0"), Error);
}

TEST_F(MixtureSamplerTest, WindowsArePureFunctionsOfSeedStepIndex) {
  const MixtureSampler s(*shards_, parse_mixture("a=1,b=1"), 33, 5);
  const MixtureSampler same(*shards_, parse_mixture("a=1,b=1"), 33, 5);
  const MixtureSampler other(*shards_, parse_mixture("a=1,b=1"), 33, 6);
  int differ = 0;
  for (int64_t step = 1; step < 50; ++step) {
    for (int64_t i = 0; i < 4; ++i) {
      const Window w = s.window(step, i);
      EXPECT_EQ(w.source, same.window(step, i).source);
      EXPECT_EQ(w.start, same.window(step, i).start);
      if (w.start != other.window(step, i).start) ++differ;
      EXPECT_GE(w.start, 0);
      EXPECT_LE(w.start + 33, static_cast<int64_t>(shards_->train(w.source).size()));
    }
  }
  EXPECT_GT(differ, 150);
  std::vector<int32_t> batch(2 * 33);
  s.fill(7, 1, 2, batch);
  const Window w = s.window(7, 2);
  EXPECT_TRUE(std::equal(batch.begin() + 33, batch.end(), shards_->train(w.source).begin() + w.start));
}

TEST_F(MixtureSamplerTest, SourcesFollowTheWeights) {
  const MixtureSampler s(*shards_, parse_mixture("a=0.2,b=0,c=0.8"), 17, 1);
  int64_t counts[3] = {0, 0, 0};
  const int64_t n = 20000;
  for (int64_t i = 0; i < n; ++i) ++counts[s.window(i / 16, i % 16).source];
  EXPECT_EQ(counts[1], 0);
  EXPECT_NEAR(static_cast<double>(counts[0]) / n, 0.2, 0.015);
  EXPECT_NEAR(static_cast<double>(counts[2]) / n, 0.8, 0.015);
}

TEST_F(MixtureSamplerTest, ValidationWindowsAreFixedAndDisjoint) {
  const MixtureSampler s(*shards_, parse_mixture("a=1"), 65, 1);
  const auto windows = s.val_windows(1, 100);  // source b; more than fit
  const int64_t val = static_cast<int64_t>(shards_->val(1).size());
  ASSERT_EQ(static_cast<int64_t>(windows.size()), val / 65);
  for (size_t i = 0; i < windows.size(); ++i) {
    EXPECT_EQ(windows[i].source, 1);
    if (i > 0) {
      EXPECT_GE(windows[i].start, windows[i - 1].start + 65);
    }
    EXPECT_LE(windows[i].start + 65, val);
  }
  EXPECT_EQ(s.val_windows(1, 3).size(), 3u);
  EXPECT_TRUE(s.val_windows(1, 0).empty());
  const MixtureSampler long_windows(*shards_, parse_mixture("a=1"), 10000, 1);
  EXPECT_TRUE(long_windows.val_windows(0, 4).empty());  // val split shorter than a window
}

TEST_F(MixtureSamplerTest, RejectsUnknownSourcesAndShortData) {
  EXPECT_THROW(MixtureSampler(*shards_, parse_mixture("zz=1"), 33, 1), Error);
  EXPECT_THROW(MixtureSampler(*shards_, parse_mixture("a=1"), 1 << 20, 1), Error);
}

}  // namespace
}  // namespace dspark::train
