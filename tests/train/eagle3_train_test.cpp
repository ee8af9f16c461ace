// EAGLE-3 training end to end on a tiny random target and its own greedy answers: the loss
// falls over a few steps; a run stopped and resumed reproduces an uninterrupted one's losses
// exactly; the export (directly and through `dspark-train export`'s drafter extension) reads
// back with Eagle3Config and gives the checkpoint's tensors bit for bit (d2t as I64, t2d as
// BOOL); --init-from starts from an earlier drafter's weights.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>

#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "core/rng.h"
#include "loader/safetensors.h"
#include "spec/eagle3_config.h"
#include "train/draft/draft_commands.h"
#include "train/draft/eagle3.h"
#include "train/draft/eagle3_io.h"
#include "train/draft/eagle3_train.h"
#include "train/draft/regen_records.h"
#include "train/greedy_records.h"
#include "train/export.h"
#include "train/model/hf_weights.h"
#include "train/model/transformer.h"

namespace dspark::train {
namespace {

namespace fs = std::filesystem;

class Eagle3TrainTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("dspark_eagle3_train_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    ModelConfig c;
    c.model_type = ModelType::kLlama;
    c.model_type_name = "llama";
    c.vocab_size = 256;
    c.hidden_size = 32;
    c.intermediate_size = 64;
    c.num_hidden_layers = 4;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.head_dim = 8;
    c.max_position_embeddings = 256;
    c.rms_norm_eps = 1e-5f;
    c.tie_word_embeddings = true;
    CausalLmImpl target(c);
    target.init_weights(0.5, 11);
    ExportOptions ex;
    ex.eos_id = 0;
    export_hf(target, root_ / "target", ex);
    testing::write_greedy_records(root_ / "target", root_ / "data" / "regen.jsonl", 48, 20, 255);
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  static Eagle3TrainOptions options(const std::string& run) {
    Eagle3TrainOptions o;
    o.target = root_ / "target";
    o.data = root_ / "data";
    o.out = root_ / run;
    o.draft_vocab = 64;
    o.ttt_steps = 3;
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
    o.eval_chains = 8;
    o.eval_drafts = 4;
    o.save_every = 0;
    o.quiet = true;
    return o;
  }

  static fs::path root_;
};

fs::path Eagle3TrainTest::root_;

double mean(const std::vector<double>& v, size_t first, size_t count) {
  return std::accumulate(v.begin() + static_cast<long>(first), v.begin() + static_cast<long>(first + count), 0.0) /
         static_cast<double>(count);
}

TEST_F(Eagle3TrainTest, TrainingReducesTheLossAndExports) {
  const Eagle3TrainResult r = run_eagle3_training(options("run"));
  for (double l : r.losses) std::printf("%.3f ", l);
  std::printf("\n");
  ASSERT_EQ(r.losses.size(), 30u);
  const double first = mean(r.losses, 0, 3), last = mean(r.losses, 27, 3);
  EXPECT_LT(last, 0.85 * first) << "first " << first << " last " << last;
  ASSERT_EQ(r.accuracy.back().size(), 3u);
  EXPECT_GT(mean(r.accuracy.back(), 0, 1), 0.0);
  ASSERT_EQ(r.val_tau_greedy.size(), 1u);
  EXPECT_GE(r.val_tau_greedy[0], 1.0);
  EXPECT_GT(r.tokens_per_second, 0.0);

  const Eagle3Config c = Eagle3Config::from_file(root_ / "run" / "drafter");
  EXPECT_EQ(c.aux_hidden_state_layer_ids, (std::vector<int32_t>{1, 2, 4}));  // default for 4 layers
  EXPECT_EQ(c.draft_vocab_size, 64);
  EXPECT_EQ(c.layer.num_hidden_layers, 1);
  EXPECT_EQ(c.speculative_tokens, 3);
  EXPECT_EQ(c.verifier_name_or_path, fs::absolute(root_ / "target").lexically_normal().string());
  c.validate_for_target(ModelConfig::from_file(root_ / "target"), "exported");
}

TEST_F(Eagle3TrainTest, ResumedRunReproducesAnUninterruptedOne) {
  Eagle3TrainOptions full = options("full");
  full.steps = 6;
  full.export_at_end = false;
  const Eagle3TrainResult a = run_eagle3_training(full);
  Eagle3TrainOptions part = options("part");
  part.steps = 6;
  part.stop_after = 3;
  part.export_at_end = false;
  const Eagle3TrainResult b1 = run_eagle3_training(part);
  EXPECT_TRUE(b1.interrupted);
  part.stop_after = 0;
  const Eagle3TrainResult b2 = run_eagle3_training(part);
  EXPECT_EQ(b2.first_step, 4);
  std::vector<double> b = b1.losses;
  b.insert(b.end(), b2.losses.begin(), b2.losses.end());
  ASSERT_EQ(a.losses.size(), b.size());
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(a.losses[i], b[i]) << "step " << i + 1;
}

// The bytes of a stored tensor of any dtype.
std::vector<std::byte> bytes_of(const WeightStore& store, const std::string& name) {
  const TensorInfo& info = store.find(name);
  return {info.bytes.begin(), info.bytes.end()};
}

TEST_F(Eagle3TrainTest, ExportReadsBackBitForBit) {
  Eagle3TrainOptions o = options("export");
  o.steps = 3;
  run_eagle3_training(o);
  const fs::path checkpoint = root_ / "export" / "checkpoint";

  // f32: every tensor the checkpoint's, bit for bit.
  DrafterExportOptions f32;
  f32.dtype = DType::kF32;
  export_eagle3(root_ / "export", root_ / "export_f32", f32);
  const WeightStore ck(checkpoint), ex(root_ / "export_f32");
  ASSERT_EQ(ck.names(), ex.names());
  for (const auto& name : ck.names()) {
    EXPECT_EQ(ck.find(name).dtype_tag, ex.find(name).dtype_tag) << name;
    EXPECT_EQ(ck.find(name).shape, ex.find(name).shape) << name;
    EXPECT_EQ(bytes_of(ck, name), bytes_of(ex, name)) << name;
  }
  EXPECT_EQ(ex.find("d2t").dtype_tag, "I64");
  EXPECT_EQ(ex.find("d2t").shape, (std::vector<int64_t>{64}));
  EXPECT_EQ(ex.find("t2d").dtype_tag, "BOOL");
  EXPECT_EQ(ex.find("t2d").shape, (std::vector<int64_t>{256}));
  EXPECT_FALSE(ex.contains("embed_tokens.weight"));

  // The config reads back (aux ids written explicitly) and equals the checkpoint's but for dtype.
  Eagle3Config a = Eagle3Config::from_file(checkpoint), b = Eagle3Config::from_file(root_ / "export_f32");
  EXPECT_EQ(b.layer.torch_dtype, "float32");
  a.layer.torch_dtype = b.layer.torch_dtype;
  EXPECT_EQ(a, b);
  std::ifstream in(root_ / "export_f32" / "config.json");
  const auto raw = nlohmann::json::parse(in);
  EXPECT_EQ(raw.at("eagle_aux_hidden_state_layer_ids"), nlohmann::json::array({1, 2, 4}));
  EXPECT_EQ(raw.at("speculators_model_type"), "eagle3");

  // The module loaded from the export is the checkpoint's.
  auto target = load_hf_model(root_ / "target");
  auto from_checkpoint = load_eagle3(root_ / "export", *target);
  auto from_export = load_eagle3(root_ / "export_f32", *target);
  auto pa = from_checkpoint->named_parameters(), pb = from_export->named_parameters();
  for (const auto& item : pa) EXPECT_TRUE(item.value().equal(pb[item.key()])) << item.key();
  EXPECT_TRUE(from_checkpoint->d2t().equal(from_export->d2t()));
  EXPECT_TRUE(from_checkpoint->t2d().equal(from_export->t2d()));

  // `dspark-train export --checkpoint RUN --out DIR` (bf16 by default) claims the run.
  CLI::App app;
  auto* cmd = app.add_subcommand("export");
  const ExportExtension ext = drafter_export_extension();
  ext.add_options(cmd);
  ASSERT_TRUE(ext.handle(root_ / "export", root_ / "export_bf16"));
  const WeightStore bf(root_ / "export_bf16");
  ASSERT_EQ(bf.names(), ck.names());
  for (const auto& name : ck.names()) {
    const TensorInfo& info = ck.find(name);
    if (info.dtype_tag != "F32") {
      EXPECT_EQ(bytes_of(ck, name), bytes_of(bf, name)) << name;  // d2t, t2d
      continue;
    }
    const TensorInfo& out = bf.find(name);
    ASSERT_EQ(out.dtype_tag, "BF16") << name;
    for (int64_t i = 0; i < info.num_elements(); ++i) {
      float f;
      uint16_t h;
      std::memcpy(&f, info.bytes.data() + 4 * i, 4);
      std::memcpy(&h, out.bytes.data() + 2 * i, 2);
      ASSERT_EQ(h, float_to_bf16(f)) << name << " element " << i;
    }
  }
  EXPECT_EQ(Eagle3Config::from_file(root_ / "export_bf16").layer.torch_dtype, "bfloat16");
}

TEST_F(Eagle3TrainTest, InitFromAnEarlierDrafterStartsFromItsWeights) {
  Eagle3TrainOptions first = options("warm_source");
  first.steps = 20;
  const Eagle3TrainResult a = run_eagle3_training(first);
  Eagle3TrainOptions next = options("warm_next");
  next.init_from = root_ / "warm_source" / "drafter";
  next.draft_vocab = 32;  // ignored: the shape and vocabulary come from the earlier drafter
  next.steps = 2;
  next.warmup = 0;
  next.lr = 1e-6;
  next.min_lr = 1e-6;
  const Eagle3TrainResult b = run_eagle3_training(next);
  ASSERT_EQ(b.losses.size(), 2u);
  const double fresh = mean(a.losses, 0, 2), trained = mean(a.losses, 18, 2);
  EXPECT_LT(b.losses[0], trained + 0.5 * (fresh - trained)) << "fresh " << fresh << " trained " << trained;
  EXPECT_EQ(Eagle3Config::from_file(root_ / "warm_next" / "drafter").draft_vocab_size, 64);
}

}  // namespace
}  // namespace dspark::train
