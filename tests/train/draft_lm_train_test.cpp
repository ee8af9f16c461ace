// Draft-LM distillation (`dspark-train draft-lm`): the loss against a hand-computed KL; on a
// tiny random target and its own greedy answers the training KL falls over a few steps and
// the held-out τ lies in 1 .. 1 + K; a run stopped and resumed reproduces an uninterrupted
// one's losses exactly; the export reads back as the checkpoint's weights (bf16-rounded); a
// new run without --init-from and a draft with another vocabulary are refused clearly.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "core/rng.h"
#include "train/checkpoint.h"
#include "train/draft/draft_lm_loss.h"
#include "train/draft/draft_lm_train.h"
#include "train/draft/regen_records.h"
#include "train/greedy_records.h"
#include "train/export.h"
#include "train/model/hf_weights.h"
#include "train/model/transformer.h"

namespace dspark::train {
namespace {

namespace fs = std::filesystem;

ModelConfig tiny_config(int64_t layers, int64_t vocab) {
  ModelConfig c;
  c.model_type = ModelType::kLlama;
  c.model_type_name = "llama";
  c.vocab_size = vocab;
  c.hidden_size = 32;
  c.intermediate_size = 64;
  c.num_hidden_layers = layers;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.max_position_embeddings = 256;
  c.rms_norm_eps = 1e-5f;
  c.tie_word_embeddings = true;
  c.eos_token_id = 0;
  return c;
}

TEST(DraftLmLoss, IsTheMaskedForwardKlAndCountsAgreement) {
  // B = 1, T = 4, V = 3: rows 0..2 predict tokens 1..3; token 1 is prompt, so row 0 is unsupervised.
  auto draft = at::tensor({0.f, 1.f, 2.f, 2.f, 0.f, 0.f, 1.f, 1.f, 0.f, 3.f, 3.f, 3.f}).view({1, 4, 3});
  auto target = at::tensor({2.f, 0.f, 0.f, 0.f, 3.f, 0.f, 0.f, 0.f, 1.f, 0.f, 0.f, 0.f}).view({1, 4, 3});
  auto mask = at::tensor({0, 0, 1, 1}).to(at::kBool).view({1, 4});
  draft.set_requires_grad(true);
  const DraftLmLoss l = draft_lm_loss(draft, target, mask);
  double expected = 0;
  for (int t : {1, 2}) {
    auto lp = at::log_softmax(target[0][t], -1), lq = at::log_softmax(draft[0][t].detach(), -1);
    expected += (lp.exp() * (lp - lq)).sum().item<double>();
  }
  expected /= 2;
  EXPECT_NEAR(l.total.item<double>(), expected, 1e-6);
  EXPECT_NEAR(l.kl, expected, 1e-6);
  EXPECT_EQ(l.rows, 2.0);
  // Row 1: draft argmax 0, target argmax 1 (disagree); row 2: draft argmax 0 (tie → first), target 2.
  EXPECT_EQ(l.agreement, 0.0);
  l.total.backward();
  EXPECT_TRUE(draft.grad()[0][0].abs().sum().item<double>() == 0.0) << "an unsupervised row got a gradient";
  EXPECT_GT(draft.grad()[0][1].abs().sum().item<double>(), 0.0);
  // A draft equal to the target: zero KL, full agreement.
  const DraftLmLoss same = draft_lm_loss(target, target, mask);
  EXPECT_NEAR(same.kl, 0.0, 1e-7);
  EXPECT_EQ(same.agreement, 1.0);
}

class DraftLmTrainTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("dspark_draft_lm_train_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    ExportOptions ex;
    ex.eos_id = 0;
    CausalLmImpl target(tiny_config(4, 128));
    target.init_weights(0.5, 11);
    export_hf(target, root_ / "target", ex);
    CausalLmImpl draft(tiny_config(1, 128));
    draft.init_weights(0.1, 12);
    ExportOptions draft_ex = ex;
    draft_ex.pad_id = 3;
    export_hf(draft, root_ / "draft", draft_ex);
    CausalLmImpl other(tiny_config(1, 96));
    other.init_weights(0.1, 13);
    export_hf(other, root_ / "other_vocab", ex);
    testing::write_greedy_records(root_ / "target", root_ / "data" / "regen.jsonl", 40, 16, 127);
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  static DraftLmTrainOptions options(const std::string& run) {
    DraftLmTrainOptions o;
    o.target = root_ / "target";
    o.data = root_ / "data";
    o.out = root_ / run;
    o.init_from = root_ / "draft";
    o.val_fraction = 0.2;
    o.batch = 4;
    o.steps = 30;
    o.warmup = 2;
    o.lr = 5e-3;
    o.min_lr = 5e-4;
    o.threads = 1;
    o.log_every = 5;
    o.eval_every = 0;
    o.eval_sequences = 8;
    o.eval_drafts = 4;
    o.save_every = 0;
    o.quiet = true;
    return o;
  }

  static fs::path root_;
};

fs::path DraftLmTrainTest::root_;

double mean(const std::vector<double>& v, size_t first, size_t count) {
  return std::accumulate(v.begin() + static_cast<long>(first), v.begin() + static_cast<long>(first + count), 0.0) /
         static_cast<double>(count);
}

TEST_F(DraftLmTrainTest, TrainingReducesTheKlAndExports) {
  DraftLmTrainOptions o = options("run");
  o.steps = 60;
  o.eval_every = 30;
  const DraftLmTrainResult r = run_draft_lm_training(o);
  ASSERT_EQ(r.losses.size(), 60u);
  const double first = mean(r.losses, 0, 5), last = mean(r.losses, 55, 5);
  EXPECT_LT(last, 0.7 * first) << "first " << first << " last " << last;
  ASSERT_EQ(r.val_tau_greedy.size(), 2u);  // step 30 and the end
  EXPECT_GE(r.val_tau_greedy[0], 1.0);
  EXPECT_LE(r.val_tau_greedy[1], 5.0);  // 1 + K at most
  EXPECT_GT(r.val_kl[1], 0.0);  // 32 training sequences of a random target: held-out KL need not fall
  EXPECT_GT(r.tokens_per_second, 0.0);

  // The export is the checkpoint's weights rounded to bf16, and a Hugging Face model.
  auto checkpoint = std::make_shared<CausalLmImpl>(tiny_config(1, 128));
  load_checkpoint(root_ / "run" / "checkpoint", *checkpoint, nullptr);
  auto exported = load_hf_model(root_ / "run" / "drafter");
  EXPECT_EQ(exported->config().num_hidden_layers, 1);
  EXPECT_EQ(exported->config().eos_token_id, 0);
  std::ifstream generation(root_ / "run" / "drafter" / "generation_config.json");
  EXPECT_EQ(nlohmann::json::parse(generation).value("pad_token_id", -2), 3) << "the draft's own pad id";
  auto a = checkpoint->named_parameters(), b = exported->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (const auto& item : a)
    EXPECT_TRUE(item.value().to(at::kBFloat16).to(at::kFloat).equal(b[item.key()])) << item.key();
}

TEST_F(DraftLmTrainTest, ResumedRunReproducesAnUninterruptedOne) {
  DraftLmTrainOptions full = options("full");
  full.steps = 6;
  full.export_at_end = false;
  const DraftLmTrainResult a = run_draft_lm_training(full);
  DraftLmTrainOptions part = options("part");
  part.steps = 6;
  part.stop_after = 3;
  part.export_at_end = false;
  const DraftLmTrainResult b1 = run_draft_lm_training(part);
  EXPECT_TRUE(b1.interrupted);
  part.stop_after = 0;
  part.init_from.clear();  // a resumed run needs no --init-from
  const DraftLmTrainResult b2 = run_draft_lm_training(part);
  EXPECT_EQ(b2.first_step, 4);
  std::vector<double> b = b1.losses;
  b.insert(b.end(), b2.losses.begin(), b2.losses.end());
  ASSERT_EQ(a.losses.size(), b.size());
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(a.losses[i], b[i]) << "step " << i + 1;
}

std::string error_of(const DraftLmTrainOptions& o) {
  try {
    run_draft_lm_training(o);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST_F(DraftLmTrainTest, BadSetupsAreRefusedClearly) {
  DraftLmTrainOptions no_init = options("no_init");
  no_init.init_from.clear();
  EXPECT_NE(error_of(no_init).find("--init-from is required"), std::string::npos) << error_of(no_init);
  DraftLmTrainOptions vocab = options("vocab");
  vocab.init_from = root_ / "other_vocab";
  EXPECT_NE(error_of(vocab).find("vocab_size is 96 but the target's is 128"), std::string::npos) << error_of(vocab);
}

}  // namespace
}  // namespace dspark::train
