// assemble(): one path from options to target, proposer and schedule. The capture layers
// come from the drafter's config; a block drafter draws with the target's own embedding
// table and LM head weights (one stored copy), unless its directory has its own; the
// schedule is the adaptive one only for a speculative engine; bad speculators fail before
// the target loads.
#include "engine/assembly.h"

#include <gtest/gtest.h>

#include "core/check.h"
#include "engine/generation.h"
#include "spec/drafter_fixtures.h"
#include "spec/dspark_proposer.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

const std::filesystem::path& target_dir() {
  static const auto dir = [] {
    testing::TinyModelSpec spec;
    spec.num_layers = 3;
    return testing::write_tiny_model_with_tokenizer(spec, "assembly-target");
  }();
  return dir;
}

std::filesystem::path drafter_dir(bool own_embeddings) {
  const ModelConfig target = ModelConfig::from_file(target_dir() / "config.json");
  const DrafterConfig config = testing::make_drafter_config(target, DrafterKind::kDSpark, {1, 3}, /*block_size=*/4);
  testing::DrafterWeightsSpec spec;
  spec.own_embeddings = own_embeddings;
  return testing::write_random_drafter(config, testing::make_temp_dir(own_embeddings ? "assembly-own" : "assembly-shared"),
                                       spec);
}

AssemblyOptions options(const std::string& speculator, DType compute) {
  AssemblyOptions o;
  o.model_dir = target_dir();
  o.target.compute = compute;
  o.target.max_batch_tokens = 64;
  o.speculator.speculator = speculator;
  o.engine.max_running = 3;
  o.engine.max_batch_tokens = 64;
  o.engine.prefill_chunk = 64;
  o.schedule = SpecSchedule::kFixed;
  return o;
}

class AssemblyByDtype : public ::testing::TestWithParam<DType> {};

TEST_P(AssemblyByDtype, ADrafterSharesTheTargetsEmbeddingAndLmHead) {
  Assembly a = assemble(options(drafter_dir(false).string(), GetParam()));
  EXPECT_EQ(a.target->options().capture_layers, (std::vector<int32_t>{0, 2}));  // aux ids {1, 3}
  EXPECT_EQ(a.target->options().max_sequences, 3);
  const auto* drafter = dynamic_cast<const DSparkProposer*>(a.proposer.get());
  ASSERT_NE(drafter, nullptr);
  EXPECT_EQ(&drafter->embedding(), a.target->embedding().get());
  EXPECT_TRUE(drafter->lm_head().shares_weights_with(a.target->lm_head()));
  EXPECT_EQ(a.engine.spec_schedule, SpecSchedule::kFixed);
  EXPECT_FALSE(a.profile.has_value());
  // The engine takes the parts as they are (it checks that the capture layers agree) and runs.
  Engine engine(*a.target, *a.tokenizer, a.engine, std::move(a.proposer));
  GenerationOptions greedy;
  greedy.max_tokens = 12;
  greedy.sampling.temperature = 0;
  greedy.ignore_eos = true;
  EXPECT_EQ(generate_one(engine, {5, 6, 7, 8}, greedy).tokens.size(), 12u);
  EXPECT_GT(engine.spec_metrics().num_drafts, 0);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, AssemblyByDtype, ::testing::Values(DType::kF32, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(Assembly, ADrafterWithItsOwnEmbeddingsKeepsThem) {
  const Assembly a = assemble(options(drafter_dir(true).string(), DType::kBF16));
  const auto* drafter = dynamic_cast<const DSparkProposer*>(a.proposer.get());
  ASSERT_NE(drafter, nullptr);
  EXPECT_NE(&drafter->embedding(), a.target->embedding().get());
  EXPECT_FALSE(drafter->lm_head().shares_weights_with(a.target->lm_head()));
}

TEST(Assembly, NoSpeculatorMeansNoCaptureAndTheFixedSchedule) {
  AssemblyOptions o = options("", DType::kBF16);
  o.schedule = SpecSchedule::kAdaptive;
  const Assembly a = assemble(o);
  EXPECT_EQ(a.proposer, nullptr);
  EXPECT_TRUE(a.target->options().capture_layers.empty());
  EXPECT_EQ(a.engine.spec_schedule, SpecSchedule::kFixed);
  EXPECT_FALSE(a.profile.has_value());
}

TEST(Assembly, AGivenStepCostTableIsKeptForTheAdaptiveSchedule) {
  AssemblyOptions o = options("ngram", DType::kBF16);
  o.schedule = SpecSchedule::kAdaptive;
  o.engine.step_cost = std::make_shared<const StepCostTable>(std::vector<double>(64, 100.0));
  const Assembly a = assemble(o);
  ASSERT_NE(a.proposer, nullptr);
  EXPECT_EQ(a.engine.spec_schedule, SpecSchedule::kAdaptive);
  EXPECT_EQ(a.engine.step_cost, o.engine.step_cost);
  EXPECT_FALSE(a.profile.has_value());  // nothing measured
}

TEST(Assembly, BadSpeculatorsAndDirectoriesAreRefused) {
  AssemblyOptions o = options((target_dir() / "missing").string(), DType::kBF16);
  EXPECT_THROW(assemble(o), Error);
  o = options("", DType::kBF16);
  o.model_dir = target_dir() / "missing";
  EXPECT_THROW(assemble(o), Error);
}

}  // namespace
}  // namespace dspark
