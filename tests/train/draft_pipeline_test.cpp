// The drafter pipeline end to end on a tiny random target with the project's tokenizer:
// regen through the engine (records, training splits only, greedy answers equal to the
// trainer's own greedy decoding, resume), draft training (the loss falls; a run stopped and
// resumed reproduces an uninterrupted one bit for bit; DFlash), calibration, export from the
// checkpoint, and draft vocabularies from the regen data.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <set>

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "core/check.h"
#include "loader/safetensors.h"
#include "tokenizer/tokenizer.h"
#include "spec/drafter_config.h"
#include "spec/dspark_proposer.h"
#include "train/draft/calibrate.h"
#include "train/draft/draft_train.h"
#include "train/draft/drafter.h"
#include "train/draft/drafter_io.h"
#include "train/draft/drafter_vocab.h"
#include "train/draft/regen.h"
#include "train/draft/regen_records.h"
#include "train/checkpoint.h"
#include "train/export.h"
#include "train/model/hf_weights.h"
#include "train/model/transformer.h"

namespace dspark::train {
namespace {

namespace fs = std::filesystem;

class DraftPipelineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("dspark_draft_pipeline_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    ModelConfig c;
    c.model_type = ModelType::kLlama;
    c.model_type_name = "llama";
    c.vocab_size = 8192;  // the tokenizer of models/tiny-target
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
    ex.tokenizer_dir = fs::path(DSPARK_SOURCE_DIR) / "models" / "tiny-target";
    ex.eos_id = 0;
    ex.pad_id = 1;
    export_hf(target, root_ / "target", ex);
    regen_ = regen_options();
    first_regen_ = run_regen(regen_);
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  static RegenOptions regen_options() {
    RegenOptions o;
    o.model = root_ / "target";
    o.shared_dir = fs::path(DSPARK_SHARED_DIR);
    o.out = root_ / "regen" / "data.jsonl";
    o.gsm8k = 16;
    o.mbpp = 6;
    o.code = 0;
    o.prose = 0;
    o.max_tokens = 24;
    o.dtype = "f32";
    o.max_running = 4;
    o.threads = 1;
    o.quiet = true;
    return o;
  }

  static DraftTrainOptions train_options(const std::string& run) {
    DraftTrainOptions o;
    o.target = root_ / "target";
    o.data = root_ / "regen";
    o.out = root_ / run;
    o.block_size = 4;
    o.layers = 1;
    o.markov_rank = 8;
    o.val_fraction = 0.2;
    o.batch = 4;
    o.anchors = 8;
    o.steps = 20;
    o.warmup = 2;
    o.lr = 5e-3;
    o.min_lr = 5e-4;
    o.threads = 1;
    o.log_every = 5;
    o.eval_every = 0;
    o.eval_sequences = 8;
    o.save_every = 0;
    o.quiet = true;
    return o;
  }

  static fs::path root_;
  static RegenOptions regen_;
  static RegenResult first_regen_;
};

fs::path DraftPipelineTest::root_;
RegenOptions DraftPipelineTest::regen_;
RegenResult DraftPipelineTest::first_regen_;

TEST_F(DraftPipelineTest, RegenWritesTrainingPromptsAndGreedyAnswers) {
  EXPECT_EQ(first_regen_.prompts, 22);
  EXPECT_EQ(first_regen_.written, 22);
  EXPECT_EQ(first_regen_.failed, 0);
  const auto records = read_regen_records(regen_.out);
  ASSERT_EQ(records.size(), 22u);
  const Tokenizer tokenizer = Tokenizer::from_dir(root_ / "target");
  std::set<std::string> ids;
  int mbpp = 0;
  for (const auto& r : records) {
    EXPECT_TRUE(ids.insert(r.id).second) << r.id;
    EXPECT_EQ(r.prompt_ids, tokenizer.encode(r.prompt)) << r.id;
    EXPECT_LE(r.completion_ids.size(), 24u);
    if (r.source == "mbpp") {
      ++mbpp;
      const int64_t task = std::stoll(r.id.substr(5));
      EXPECT_TRUE(task >= 601 && task <= 974) << r.id;
      EXPECT_EQ(r.prompt.substr(0, 2), "# ");
    } else {
      EXPECT_EQ(r.source, "gsm8k");
      EXPECT_EQ(r.prompt.substr(0, 10), "Question: ");
      EXPECT_EQ(r.prompt.substr(r.prompt.size() - 8), "\nAnswer:");
    }
  }
  EXPECT_EQ(mbpp, 6);

  // The engine's greedy answer (f32) is the trainer model's greedy continuation.
  auto model = load_hf_model(root_ / "target");
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < 3; ++i) {
    const auto& r = records[i];
    std::vector<int32_t> seq = r.prompt_ids;
    for (size_t k = 0; k < r.completion_ids.size(); ++k) {
      auto logits = hf_logits(*model, seq);
      const int32_t next = static_cast<int32_t>(logits[logits.size(0) - 1].argmax().item<int64_t>());
      ASSERT_EQ(next, r.completion_ids[k]) << r.id << " token " << k;
      seq.push_back(next);
    }
  }
}

TEST_F(DraftPipelineTest, RegenResumesAndSkipsAPartialLine) {
  const fs::path copy = root_ / "regen_copy.jsonl";
  fs::copy_file(regen_.out, copy, fs::copy_options::overwrite_existing);
  {
    std::ofstream out(copy, std::ios::app);
    out << R"({"id": "gsm8k:99999", "prompt_ids": [1, 2)";  // a killed writer's last line
  }
  RegenOptions o = regen_;
  o.out = copy;
  const RegenResult again = run_regen(o);
  EXPECT_EQ(again.skipped, 22);
  EXPECT_EQ(again.written, 0);
  EXPECT_EQ(read_regen_records(copy).size(), 22u);
  o.gsm8k = 17;  // one more prompt: only it is answered
  const RegenResult more = run_regen(o);
  EXPECT_EQ(more.written, 1);
  EXPECT_EQ(read_regen_records(copy).size(), 23u);
  fs::remove(copy);
}

TEST_F(DraftPipelineTest, DSparkTrainingReducesTheLossAndExports) {
  DraftTrainOptions o = train_options("dspark");
  o.steps = 30;
  const DraftTrainResult r = run_draft_training(o);
  for (double l : r.losses) std::printf("%.3f ", l);
  std::printf("\n");
  ASSERT_EQ(r.losses.size(), 30u);
  const double first = (r.losses[0] + r.losses[1] + r.losses[2]) / 3;
  const double last = (r.losses[27] + r.losses[28] + r.losses[29]) / 3;
  EXPECT_LT(last, 0.85 * first) << "first " << first << " last " << last;
  ASSERT_EQ(r.val_tau_greedy.size(), 1u);
  EXPECT_GE(r.val_tau_greedy[0], 1.0);
  EXPECT_GE(r.val_tau_expected[0], 1.0);

  const DrafterConfig exported = DrafterConfig::from_file(root_ / "dspark" / "drafter");
  EXPECT_EQ(exported.kind, DrafterKind::kDSpark);
  EXPECT_EQ(exported.mask_token_id, 2);  // the tokenizer's <|mask|>
  EXPECT_EQ(exported.num_drafts(), 4);
  exported.validate_for_target(ModelConfig::from_file(root_ / "target"), "exported");
  // Export from the checkpoint gives the same tensors.
  export_drafter(root_ / "dspark", root_ / "dspark_export", DrafterExportOptions{});
  const WeightStore a(root_ / "dspark" / "drafter"), b(root_ / "dspark_export");
  ASSERT_EQ(a.names(), b.names());
  for (const auto& name : a.names()) {
    const auto& ta = a.get(name);
    const auto& tb = b.get(name);
    ASSERT_EQ(ta.shape, tb.shape) << name;
    EXPECT_TRUE(std::equal(ta.bytes.begin(), ta.bytes.end(), tb.bytes.begin())) << name;
  }

  // Draft vocabularies from the run's regen data: the engine loads both kinds, and a
  // vocabulary of every distinct answer token covers all of them, one fewer does not.
  std::set<int32_t> answer_tokens;
  for (const RegenRecord& rec : read_regen_records(root_ / "regen" / "data.jsonl")) {
    answer_tokens.insert(rec.completion_ids.begin(), rec.completion_ids.end());
    if (rec.finish_reason == "eos") answer_tokens.insert(0);  // EOS is appended to such answers
  }
  DraftVocabOptions vo;
  vo.drafter = root_ / "dspark_export";
  vo.target = root_ / "target";
  vo.data = root_ / "regen";
  vo.val_fraction = 0.0;
  vo.quiet = true;
  vo.size = static_cast<int64_t>(answer_tokens.size());
  vo.greedy = true;
  vo.out = root_ / "greedy_vocab";
  EXPECT_DOUBLE_EQ(run_draft_vocab(vo).coverage, 1.0);
  vo.size -= 1;
  vo.greedy = false;
  vo.out = root_ / "reduced_vocab";
  const DraftVocabResult reduced = run_draft_vocab(vo);
  EXPECT_LT(reduced.coverage, 1.0);
  EXPECT_GT(reduced.coverage, 0.5);
  EXPECT_EQ(DrafterConfig::from_file(root_ / "greedy_vocab").greedy_draft_vocab_size, vo.size + 1);
  EXPECT_EQ(DrafterConfig::from_file(root_ / "reduced_vocab").draft_vocab_size, vo.size);
  DSparkProposerOptions po;
  po.max_model_len = 64;
  EXPECT_NO_THROW(DSparkProposer::load(root_ / "greedy_vocab", root_ / "target", po));
  EXPECT_NO_THROW(DSparkProposer::load(root_ / "reduced_vocab", root_ / "target", po));

  // Calibration writes one temperature per draft, for greedy and for sampling requests,
  // into both configs of the run: the greedy fit on the greedy answers, the sampled one on
  // answers sampled at temperature 1.
  RegenOptions sampled_regen = regen_options();
  sampled_regen.out = root_ / "regen_t1" / "data.jsonl";
  sampled_regen.temperature = 1.0f;
  run_regen(sampled_regen);
  CalibrateOptions co;
  co.target = root_ / "target";
  co.drafter = root_ / "dspark";
  co.data = root_ / "regen";
  co.sampled_data = root_ / "regen_t1";
  co.val_fraction = 0.2;
  co.bf16 = false;
  co.threads = 1;
  co.quiet = true;
  const CalibrateResult cal = run_calibration(co);
  EXPECT_GT(cal.num_blocks, 0);
  ASSERT_EQ(cal.sts.temperatures.size(), 4u);
  EXPECT_EQ(cal.written.size(), 2u);
  const DrafterConfig calibrated = DrafterConfig::from_file(root_ / "dspark" / "drafter");
  EXPECT_LE(cal.sts.after[0].ece, cal.sts.before[0].ece + 1e-12);  // T = 1 is on the grid
  // What is written: temperatures fitted together with the repeat shifts.
  const RepeatCalibration& rc = cal.with_repeat_shifts;
  EXPECT_EQ(calibrated.confidence_temperatures, rc.sts.temperatures);
  EXPECT_EQ(calibrated.confidence_repeat_shifts, std::vector<float>(rc.shifts.begin(), rc.shifts.end()));
  for (float shift : rc.shifts) EXPECT_TRUE(std::isfinite(shift));
  // Sampled verification: every full block counts, its survival a probability.
  EXPECT_GE(cal.num_sampled_blocks, cal.num_blocks);
  ASSERT_EQ(cal.sts_sampled.temperatures.size(), 4u);
  EXPECT_EQ(calibrated.confidence_temperatures_sampled, cal.sts_sampled.temperatures);
  EXPECT_LE(cal.sts_sampled.after[0].ece, cal.sts_sampled.before[0].ece + 1e-12);
  for (int j = 0; j < 4; ++j) {
    EXPECT_GT(cal.sts_sampled.after[j].mean_observed, 0.0) << j;
    EXPECT_LT(cal.sts_sampled.after[j].mean_observed, 1.0) << j;
    if (j > 0) {
      EXPECT_LE(cal.sts_sampled.after[j].mean_observed, cal.sts_sampled.after[j - 1].mean_observed);
    }
  }
  EXPECT_EQ(DrafterConfig::from_file(root_ / "dspark" / "checkpoint").confidence_temperatures_sampled,
            cal.sts_sampled.temperatures);
  EXPECT_GT(cal.num_sampled_sequences, 0);

  // regen marks its answers greedy: alone, they leave the sampled fit nothing, which is refused.
  CalibrateOptions greedy_only = co;
  greedy_only.write = false;
  greedy_only.sampled_data.clear();
  try {
    run_calibration(greedy_only);
    ADD_FAILURE() << "calibrated on greedy answers as if sampled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no held-out sampled answer"), std::string::npos) << e.what();
  }
  // Unmarked records (older files) serve both fits.
  {
    std::ifstream in(root_ / "regen" / "data.jsonl");
    std::ofstream out(root_ / "unmarked.jsonl");
    std::string line;
    while (std::getline(in, line)) {
      RegenRecord r = regen_record_from_json(line, "regen");
      EXPECT_EQ(r.temperature, 0.0f);
      r.temperature = -1.0f;
      out << regen_record_to_json(r) << "\n";
    }
  }
  CalibrateOptions unmarked = greedy_only;
  unmarked.data = root_ / "unmarked.jsonl";
  const CalibrateResult both = run_calibration(unmarked);
  EXPECT_EQ(both.num_sampled_sequences, both.num_greedy_sequences);
  EXPECT_EQ(both.num_greedy_sequences, cal.num_greedy_sequences);
}

TEST_F(DraftPipelineTest, ResumedRunReproducesAnUninterruptedOne) {
  DraftTrainOptions full = train_options("full");
  full.steps = 6;
  full.export_at_end = false;
  const DraftTrainResult a = run_draft_training(full);
  DraftTrainOptions part = train_options("part");
  part.steps = 6;
  part.stop_after = 3;
  part.export_at_end = false;
  const DraftTrainResult b1 = run_draft_training(part);
  EXPECT_TRUE(b1.interrupted);
  part.stop_after = 0;
  const DraftTrainResult b2 = run_draft_training(part);
  EXPECT_EQ(b2.first_step, 4);
  std::vector<double> b = b1.losses;
  b.insert(b.end(), b2.losses.begin(), b2.losses.end());
  ASSERT_EQ(a.losses.size(), b.size());
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(a.losses[i], b[i]) << "step " << i + 1;
}

TEST_F(DraftPipelineTest, InitFromAnEarlierDrafterStartsFromItsWeights) {
  DraftTrainOptions first = train_options("warm_source");
  first.steps = 20;
  const DraftTrainResult a = run_draft_training(first);
  write_confidence_calibration(root_ / "warm_source", {0.5f, 0.6f, 0.7f, 0.8f});  // as if calibrated

  DraftTrainOptions next = train_options("warm_next");
  next.init_from = root_ / "warm_source" / "drafter";
  next.block_size = 6;  // ignored: the shape comes from the earlier drafter
  next.steps = 2;
  next.warmup = 0;
  next.lr = 1e-6;
  next.min_lr = 1e-6;
  const DraftTrainResult b = run_draft_training(next);
  ASSERT_EQ(b.losses.size(), 2u);
  const double fresh = (a.losses[0] + a.losses[1]) / 2;
  const double trained = (a.losses[18] + a.losses[19]) / 2;
  // Near where the first run ended (other batches), far from a fresh start.
  EXPECT_LT(b.losses[0], trained + 0.5 * (fresh - trained)) << "fresh " << fresh << " trained " << trained;

  const DrafterConfig c = DrafterConfig::from_file(root_ / "warm_next" / "drafter");
  EXPECT_EQ(c.num_drafts(), 4);
  EXPECT_TRUE(c.confidence_temperatures.empty()) << "a retrained drafter must be calibrated again";
  EXPECT_EQ(c.verifier_name_or_path, fs::absolute(root_ / "target").lexically_normal().string());
}

TEST_F(DraftPipelineTest, LayerLrScaleMovesOnlyTheLayersItNames) {
  // One step of a 2-layer drafter at scale 1 and at scale 3 from layer 1: the same batch and
  // initial weights, so every tensor outside layer 1 ends equal and layer 1's differ.
  const auto target = load_hf_model(root_ / "target");
  std::map<std::string, torch::Tensor> after[2];
  for (int run = 0; run < 2; ++run) {
    DraftTrainOptions o = train_options("layer_lr_" + std::to_string(run));
    o.layers = 2;
    o.steps = 1;
    o.warmup = 0;
    o.layer_lr_scale_from = 1;
    o.layer_lr_scale = run == 0 ? 1.0 : 3.0;
    run_draft_training(o);
    for (const auto& item : load_drafter(find_checkpoint(o.out), *target)->named_parameters())
      after[run][item.key()] = item.value().detach().clone();
  }
  int scaled = 0;
  for (const auto& [name, a] : after[0]) {
    const bool in_layer_1 = name.rfind("layers.1.", 0) == 0;
    scaled += in_layer_1;
    if (in_layer_1)
      EXPECT_FALSE(torch::equal(a, after[1][name])) << name;
    else
      EXPECT_TRUE(torch::equal(a, after[1][name])) << name;
  }
  EXPECT_GE(scaled, 7) << "q/k/v/o, gate/up/down and the norms of layer 1";

  DraftTrainOptions bad = train_options("layer_lr_bad");
  bad.layer_lr_scale = 2.0;
  EXPECT_THROW(bad.validate(), std::exception);  // no first layer named
  bad.layer_lr_scale_from = 1;                     // the drafter has one layer
  EXPECT_THROW(run_draft_training(bad), std::exception);
}

TEST_F(DraftPipelineTest, DFlashTrainsWithCrossEntropyOnly) {
  DraftTrainOptions o = train_options("dflash");
  o.kind = "dflash";
  o.steps = 30;
  const DraftTrainResult r = run_draft_training(o);
  for (double l : r.losses) std::printf("%.3f ", l);
  std::printf("\n");
  ASSERT_EQ(r.losses.size(), 30u);
  const double first = std::accumulate(r.losses.begin(), r.losses.begin() + 5, 0.0) / 5;
  const double last = std::accumulate(r.losses.end() - 5, r.losses.end(), 0.0) / 5;
  EXPECT_LT(last, 0.9 * first) << "first " << first << " last " << last;
  const DrafterConfig c = DrafterConfig::from_file(root_ / "dflash" / "drafter");
  EXPECT_EQ(c.kind, DrafterKind::kDFlash);
  EXPECT_FALSE(c.sample_from_anchor);
  EXPECT_EQ(c.num_drafts(), 3);
  EXPECT_EQ(c.markov_rank, 0);
  EXPECT_FALSE(c.enable_confidence_head);
}

}  // namespace
}  // namespace dspark::train
