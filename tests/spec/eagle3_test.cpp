// EAGLE-3 on the engine side: its config in both layouts (read, written back, refused with
// the field named), the proposer's checks of the weights, and losslessness through the
// whole engine on a tiny random target — greedy output with speculation equals plain greedy
// output token for token (alone, batched with chunked prefill, a reduced draft vocabulary,
// a context window), a proposer that lives through rounds with its context projection
// deferred matches a fresh one bit for bit, and sampled output is distributed as the target's.
#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/rng.h"
#include "engine/engine.h"
#include "spec/draft_vocab.h"
#include "spec/eagle3_fixtures.h"
#include "spec/eagle3_proposer.h"
#include "spec/proposer_factory.h"
#include "support/continuation_stats.h"
#include "support/engine_requests.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

using testing::greedy;
using testing::run_all;

const std::filesystem::path& target_dir() {
  static const auto dir = [] {
    testing::TinyModelSpec spec;
    spec.num_layers = 4;
    return testing::write_tiny_model_with_tokenizer(spec, "eagle3-target");
  }();
  return dir;
}

ModelConfig target_config() { return ModelConfig::from_file(target_dir() / "config.json"); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// ---- config ----

TEST(Eagle3Config, SpeculatorsLayoutRoundTrips) {
  const Eagle3Config c = testing::make_eagle3_config(target_config(), {1, 2, 4}, 64);
  const Eagle3Config back = Eagle3Config::from_json(c.to_json(), "round trip");
  EXPECT_EQ(back, c);
  EXPECT_EQ(back.capture_layers(4), (std::vector<int32_t>{0, 1, 3}));
  EXPECT_EQ(back.layer_prefix(), "layers.0.");
  // Weights quantized at load (model/load_quantization.h): absent unless set, then kept.
  EXPECT_FALSE(c.to_json().contains("quantization"));
  Eagle3Config int8 = c;
  int8.quantization = "int8";
  EXPECT_EQ(Eagle3Config::from_json(int8.to_json(), "round trip"), int8);
}

TEST(Eagle3Config, OriginalLayoutAndVllmDefaultLayers) {
  Eagle3Config c = testing::make_eagle3_config(target_config(), {}, 64);
  c.layout = Eagle3Config::Layout::kOriginal;
  const auto dir = testing::write_random_eagle3(c, testing::make_temp_dir("eagle3-original"));
  EXPECT_TRUE(is_eagle3_directory(dir));
  const Eagle3Config read = Eagle3Config::from_file(dir);
  EXPECT_EQ(read.layout, Eagle3Config::Layout::kOriginal);
  EXPECT_EQ(read.layer_prefix(), "midlayer.");
  EXPECT_EQ(read.draft_vocab_size, 64);
  // vLLM's default for an L-layer target: ids 2, L/2, L-3 (outputs of layers 1, L/2-1, L-4).
  EXPECT_EQ(read.aux_layer_ids(32), (std::vector<int32_t>{2, 16, 29}));
  EXPECT_EQ(read.capture_layers(32), (std::vector<int32_t>{1, 15, 28}));
}

TEST(Eagle3Config, BadConfigsAreRefusedNamingTheField) {
  const ModelConfig target = target_config();
  const Eagle3Config good = testing::make_eagle3_config(target, {1, 2, 4}, 64);
  auto refused = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = good.to_json();
    edit(j);
    return error_of([&] { Eagle3Config::from_json(j, "cfg.json").validate_for_target(target, "cfg.json"); });
  };
  EXPECT_NE(refused([](auto& j) { j["target_hidden_size"] = 100; }).find("target_hidden_size is 100"),
            std::string::npos);
  EXPECT_NE(refused([](auto& j) { j["eagle_aux_hidden_state_layer_ids"] = {1, 2, 9}; })
                .find("eagle_aux_hidden_state_layer_ids entry 9 is beyond the target's depth"),
            std::string::npos);
  EXPECT_NE(refused([](auto& j) { j["eagle_aux_hidden_state_layer_ids"] = {1, 2}; }).find("exactly 3"),
            std::string::npos);
  EXPECT_NE(refused([](auto& j) { j["draft_vocab_size"] = 1000; }).find("draft_vocab_size"), std::string::npos);
  EXPECT_NE(refused([](auto& j) { j["mystery"] = 1; }).find("unknown field 'mystery'"), std::string::npos);
  EXPECT_NE(refused([](auto& j) { j["quantization"] = "int2"; }).find("field 'quantization' must be"),
            std::string::npos);
  EXPECT_NE(refused([](auto& j) { j["transformer_layer_config"]["num_hidden_layers"] = 2; })
                .find("exactly 1 layer"),
            std::string::npos);
  EXPECT_NE(refused([](auto& j) { j["transformer_layer_config"]["vocab_size"] = 50; }).find("vocab_size"),
            std::string::npos);
  EXPECT_NE(refused([](auto& j) { j["speculators_config"]["algorithm"] = "dspark"; }).find("algorithm"),
            std::string::npos);
  EXPECT_NE(refused([](auto& j) { j.erase("draft_vocab_size"); }).find("draft_vocab_size"), std::string::npos);
  EXPECT_EQ(refused([](auto&) {}), "");
}

// ---- the proposer's checks of the weights ----

std::string load_error(const testing::Eagle3WeightsSpec& spec, bool drop_tensor = false) {
  const Eagle3Config c = testing::make_eagle3_config(target_config(), {1, 2, 4}, 64);
  const auto dir = testing::write_random_eagle3(c, testing::make_temp_dir("eagle3-bad-weights"), spec);
  Eagle3ProposerOptions o;
  o.max_model_len = 64;
  o.max_running = 2;
  return error_of([&] { Eagle3Proposer::load(dir, target_dir(), o); });
}

TEST(Eagle3Proposer, BadWeightsAreRefusedNamingTheTensor) {
  EXPECT_EQ(load_error({}), "");
  testing::Eagle3WeightsSpec out_of_range;
  out_of_range.edit_d2t = [](std::vector<int64_t>& d2t) { d2t.back() = 1000; };
  EXPECT_NE(load_error(out_of_range).find("d2t maps draft id 63"), std::string::npos);
  testing::Eagle3WeightsSpec twice;
  twice.edit_d2t = [](std::vector<int64_t>& d2t) { d2t[1] = d2t[0] - 1; };
  EXPECT_NE(load_error(twice).find("d2t maps two draft ids"), std::string::npos);
  testing::Eagle3WeightsSpec bad_t2d;
  bad_t2d.draft_ids = testing::default_draft_ids(testing::make_eagle3_config(target_config(), {1, 2, 4}, 64));
  bad_t2d.edit_d2t = [](std::vector<int64_t>& d2t) { d2t[5] += 1; };  // t2d still marks the old id
  EXPECT_NE(load_error(bad_t2d).find("t2d and d2t disagree"), std::string::npos);
  testing::Eagle3WeightsSpec no_d2t;
  no_d2t.edit_d2t = [](std::vector<int64_t>& d2t) { d2t.clear(); };
  EXPECT_NE(load_error(no_d2t).find("'d2t' has shape [0]"), std::string::npos);
}

TEST(Eagle3Proposer, MissingD2tAndUnknownTensorsAreRefused) {
  const Eagle3Config c = testing::make_eagle3_config(target_config(), {1, 2, 4}, 64);
  const auto dir = testing::write_random_eagle3(c, testing::make_temp_dir("eagle3-missing-d2t"));
  // Rewrite the weights without d2t / with an extra tensor.
  const WeightStore store(dir);
  auto rewrite = [&](bool keep_d2t, bool extra) {
    std::vector<TensorToWrite> tensors;
    for (const Eagle3Tensor& t : eagle3_tensors(c)) {
      if (t.optional) continue;
      tensors.push_back(make_f32_tensor(t.name, t.shape, store.load_f32(t.name, t.shape)));
    }
    if (keep_d2t) {
      const TensorInfo& d2t = store.find("d2t");
      std::vector<int64_t> v(d2t.num_elements());
      std::memcpy(v.data(), d2t.bytes.data(), v.size() * 8);
      tensors.push_back(make_i64_tensor("d2t", d2t.shape, v));
    }
    if (extra) tensors.push_back(make_f32_tensor("layers.1.mlp.up_proj.weight", {2}, std::vector<float>{1, 2}));
    const auto out = testing::make_temp_dir("eagle3-rewritten");
    std::filesystem::copy_file(dir / "config.json", out / "config.json");
    write_safetensors(out / "model.safetensors", tensors);
    Eagle3ProposerOptions o;
    o.max_model_len = 64;
    o.max_running = 2;
    return error_of([&] { Eagle3Proposer::load(out, target_dir(), o); });
  };
  EXPECT_NE(rewrite(false, false).find("has no tensor 'd2t'"), std::string::npos);
  EXPECT_NE(rewrite(true, true).find("'layers.1.mlp.up_proj.weight', which its config does not describe"),
            std::string::npos);
  EXPECT_EQ(rewrite(true, false), "");  // t2d is optional
}

// ---- losslessness through the engine ----

std::vector<std::vector<int32_t>> prompts(int n) {
  std::vector<std::vector<int32_t>> out;
  Rng rng(9);
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> p;
    const int len = 2 + static_cast<int>(rng.next_u64() % 30);
    for (int j = 0; j < len; ++j) p.push_back(static_cast<int32_t>(3 + rng.next_u64() % 90));
    out.push_back(p);
  }
  return out;
}

std::unique_ptr<Transformer> load_target(std::vector<int32_t> capture_layers, int64_t max_batch_tokens = 128) {
  TransformerOptions o;
  o.max_batch_tokens = max_batch_tokens;
  o.max_sequences = 16;
  o.capture_layers = std::move(capture_layers);
  return Transformer::load(target_dir(), o);
}

const std::vector<std::vector<int32_t>>& plain_outputs() {
  static const auto outputs = [] {
    auto model = load_target({});
    const Tokenizer tok = Tokenizer::from_dir(target_dir());
    std::vector<std::vector<int32_t>> out;
    for (const auto& p : prompts(12)) {
      Engine engine(*model, tok, EngineOptions{.max_running = 1, .max_batch_tokens = 128});
      out.push_back(generate_one(engine, p, greedy(40)).tokens);
    }
    return out;
  }();
  return outputs;
}

struct LosslessCase {
  std::string name;
  int64_t draft_vocab = 0;       // 0 = the whole vocabulary
  bool original_layout = false;
  int64_t max_running = 1;
  int64_t max_batch_tokens = 128;  // small: chunked prefill
  int64_t context_window = 0;
  DType compute = DType::kBF16;
};
void PrintTo(const LosslessCase& c, std::ostream* os) { *os << c.name; }

class Eagle3Lossless : public ::testing::TestWithParam<LosslessCase> {};

TEST_P(Eagle3Lossless, GreedyOutputEqualsPlain) {
  const LosslessCase& lc = GetParam();
  Eagle3Config c = testing::make_eagle3_config(target_config(), {1, 2, 4}, lc.draft_vocab);
  if (lc.original_layout) c.layout = Eagle3Config::Layout::kOriginal;
  const auto dir = testing::write_random_eagle3(c, testing::make_temp_dir("eagle3-lossless-" + lc.name));
  SpeculatorOptions so;
  so.speculator = dir.string();
  so.max_running = lc.max_running;
  so.compute = lc.compute;
  so.draft_context_window = lc.context_window;
  const SpeculatorPlan plan(so, target_config());
  EXPECT_EQ(plan.capture_layers(), (std::vector<int32_t>{0, 1, 3}));
  auto model = load_target(plan.capture_layers(), lc.max_batch_tokens);
  std::unique_ptr<Proposer> proposer = plan.build(*model);
  ASSERT_NE(dynamic_cast<Eagle3Proposer*>(proposer.get()), nullptr);
  const Tokenizer tok = Tokenizer::from_dir(target_dir());
  Engine engine(*model, tok, EngineOptions{.max_running = lc.max_running, .max_batch_tokens = lc.max_batch_tokens},
                std::move(proposer));
  const auto outputs = run_all(engine, prompts(12), greedy(40));
  ASSERT_EQ(outputs.size(), plain_outputs().size());
  for (size_t i = 0; i < outputs.size(); ++i) EXPECT_EQ(outputs[i], plain_outputs()[i]) << "prompt " << i;
  const SpecDecodeMetrics& m = engine.spec_metrics();
  EXPECT_GT(m.num_drafts, 0);
  EXPECT_EQ(engine.stats().num_running, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, Eagle3Lossless,
    ::testing::Values(LosslessCase{"alone"}, LosslessCase{"reduced_vocab_batched", 48, false, 4, 16},
                      LosslessCase{"original_layout_batched_f32", 64, true, 4, 128, 0, DType::kF32},
                      LosslessCase{"context_window", 48, false, 4, 16, 8}),
    [](const auto& info) { return info.param.name; });

// The proposer alone, fed random target states: the same drafter in both layouts drafts
// the same tokens with bit-identical logits, and a request drafts the same alone as in a
// batch with another (batch invariance).
TEST(Eagle3Proposer, LayoutsAgreeAndBatchingChangesNothing) {
  Eagle3Config c = testing::make_eagle3_config(target_config(), {1, 2, 4}, 64);
  const auto speculators = testing::write_random_eagle3(c, testing::make_temp_dir("eagle3-layout-a"));
  c.layout = Eagle3Config::Layout::kOriginal;
  const auto original = testing::write_random_eagle3(c, testing::make_temp_dir("eagle3-layout-b"));
  Eagle3ProposerOptions o;
  o.max_model_len = 64;
  o.max_running = 2;
  o.num_speculative_tokens = 4;
  o.compute = DType::kF32;
  const int64_t hidden = target_config().hidden_size;
  Rng rng(5);
  auto random_states = [&](int32_t n) {
    std::vector<float> h(3 * n * hidden);
    for (float& x : h) x = static_cast<float>(rng.uniform() * 2 - 1);
    return h;
  };
  std::vector<std::vector<int32_t>> tokens(2);
  for (auto& t : tokens)
    for (int i = 0; i < 12; ++i) t.push_back(static_cast<int32_t>(3 + rng.next_u64() % 90));
  const std::vector<std::vector<float>> states = {random_states(11), random_states(11)};
  SamplingParams sp;
  sp.temperature = 0;

  // Drafts of request 0 (and 1 when `both`), with their logits.
  auto run = [&](const std::filesystem::path& dir, bool both) {
    auto proposer = Eagle3Proposer::load(dir, target_dir(), o);
    std::vector<CommittedHiddenStates> committed;
    for (int32_t r = 0; r < (both ? 2 : 1); ++r) {
      CommittedHiddenStates s;
      s.slot = r;
      s.num_positions = 11;
      s.hidden = states[r].data();
      s.layer_stride = 11 * hidden;
      s.hidden_size = hidden;
      s.tokens = tokens[r];
      committed.push_back(s);
    }
    proposer->observe(committed);
    std::vector<DraftRequest> requests;
    for (int32_t r = 0; r < (both ? 2 : 1); ++r) requests.push_back({r, tokens[r], &sp, nullptr, 4, 4});
    std::vector<Draft> drafts(requests.size());
    proposer->propose(requests, drafts);
    std::pair<std::vector<int32_t>, std::vector<float>> out;
    out.first.assign(drafts[0].tokens.begin(), drafts[0].tokens.end());
    for (int32_t j = 0; j < static_cast<int32_t>(out.first.size()); ++j) {
      const auto l = proposer->draft_logits(0, j);
      out.second.insert(out.second.end(), l.begin(), l.end());
    }
    return out;
  };
  const auto a = run(speculators, false);
  ASSERT_EQ(a.first.size(), 4u);
  EXPECT_EQ(run(original, false), a);
  EXPECT_EQ(run(speculators, true), a);
  const std::vector<int32_t> ids = testing::default_draft_ids(c);
  for (int32_t t : a.first) EXPECT_TRUE(std::binary_search(ids.begin(), ids.end(), t)) << t;  // target ids
}

// A proposer that lives through rounds — chunked prefill, accepted drafts, a step it does
// not draft, a batch with another request, its slot released — drafts the same tokens with
// bit-identical logits as a fresh proposer that saw the whole context at once, whatever the
// pending buffer (0: rows written at once; 2 and 5: full buffers written on the way; -1:
// the default) and with context passes chunked into 6 rows.
class Eagle3ProposerLived : public ::testing::TestWithParam<int64_t> {};

TEST_P(Eagle3ProposerLived, RoundsChunksAndBatchesMatchAFreshProposer) {
  Eagle3Config c = testing::make_eagle3_config(target_config(), {1, 2, 4}, 64);
  const auto dir = testing::write_random_eagle3(c, testing::make_temp_dir("eagle3-lived"));
  const int64_t hidden = target_config().hidden_size;
  Rng rng(21);
  auto random_states = [&](int32_t n) {
    std::vector<float> h(3 * n * hidden);
    for (float& x : h) x = static_cast<float>(rng.uniform() * 2 - 1);
    return h;
  };
  auto random_tokens = [&](int n) {
    std::vector<int32_t> t;
    for (int i = 0; i < n; ++i) t.push_back(static_cast<int32_t>(3 + rng.next_u64() % 90));
    return t;
  };
  const std::vector<float> ctx = random_states(40), other_ctx = random_states(20);
  const std::vector<int32_t> tokens = random_tokens(41), other_tokens = random_tokens(21);
  SamplingParams sp;
  sp.temperature = 0;
  auto make = [&](int64_t pending, int64_t max_context_rows) {
    Eagle3ProposerOptions o;
    o.max_model_len = 64;
    o.max_running = 4;
    o.num_speculative_tokens = 4;
    o.compute = DType::kF32;
    o.max_pending_positions = pending;
    o.max_context_rows = max_context_rows;
    return Eagle3Proposer::load(dir, target_dir(), o);
  };
  // Positions [start, start + n) of `states` (40 or 20 rows) for a slot, with all tokens known.
  auto observe = [&](Eagle3Proposer& p, int32_t slot, const std::vector<float>& states,
                     const std::vector<int32_t>& toks, int32_t start, int32_t n) {
    const int32_t rows = static_cast<int32_t>(states.size() / (3 * hidden));
    CommittedHiddenStates s;
    s.slot = slot;
    s.start_position = start;
    s.num_positions = n;
    s.hidden = states.data() + start * hidden;
    s.layer_stride = rows * hidden;
    s.hidden_size = hidden;
    s.tokens = toks;
    p.observe({&s, 1});
  };
  using Drafted = std::pair<std::vector<int32_t>, std::vector<float>>;  // drafts, their logits
  // Greedy drafts come without q, each the argmax of its logits over the target vocabulary.
  auto drafted = [&](const Eagle3Proposer& p, size_t request, const Draft& d) {
    Drafted out;
    out.first.assign(d.tokens.begin(), d.tokens.end());
    EXPECT_EQ(d.probs, nullptr);
    for (int32_t j = 0; j < static_cast<int32_t>(out.first.size()); ++j) {
      const auto l = p.draft_logits(request, j);
      out.second.insert(out.second.end(), l.begin(), l.end());
      std::vector<float> target_row(static_cast<size_t>(c.layer.vocab_size), -std::numeric_limits<float>::infinity());
      scatter_draft_logits(p.draft_to_target(), l.data(), target_row.data());
      EXPECT_EQ(out.first[static_cast<size_t>(j)], argmax(target_row.data(), static_cast<int64_t>(target_row.size())))
          << "draft " << j;
    }
    return out;
  };
  auto propose_one = [&](Eagle3Proposer& p, int32_t slot, int64_t committed) {
    const DraftRequest r{slot, std::span<const int32_t>(tokens.data(), committed), &sp, nullptr, 4};
    Draft d;
    p.propose({&r, 1}, {&d, 1});
    return drafted(p, 0, d);
  };

  auto lived = make(GetParam(), /*max_context_rows=*/6);
  observe(*lived, 2, ctx, tokens, 0, 10);  // a 17-token prompt prefilled in chunks of 10 and 6
  observe(*lived, 2, ctx, tokens, 10, 6);
  EXPECT_EQ(propose_one(*lived, 2, 17).first.size(), 4u);
  observe(*lived, 2, ctx, tokens, 16, 3);  // anchor + 2 accepted drafts
  propose_one(*lived, 2, 20);
  observe(*lived, 2, ctx, tokens, 19, 1);  // nothing accepted: the anchor only
  {
    const DraftRequest idle{2, std::span<const int32_t>(tokens.data(), 20), &sp, nullptr, 0};
    Draft none;
    lived->catch_up({&idle, 1});  // drafts nothing: may leave the context pending
    lived->propose({&idle, 1}, {&none, 1});
    EXPECT_TRUE(none.tokens.empty());
  }
  observe(*lived, 2, ctx, tokens, 20, 1);  // that step's anchor
  observe(*lived, 0, other_ctx, other_tokens, 0, 20);
  const std::vector<DraftRequest> both = {{0, other_tokens, &sp, nullptr, 4},
                                          {2, std::span<const int32_t>(tokens.data(), 22), &sp, nullptr, 4}};
  std::vector<Draft> drafts(2);
  lived->catch_up(both);
  lived->propose(both, drafts);
  const Drafted got = drafted(*lived, 1, drafts[1]), got_other = drafted(*lived, 0, drafts[0]);

  auto fresh = make(0, 256);
  observe(*fresh, 3, ctx, tokens, 0, 21);
  const Drafted expected = propose_one(*fresh, 3, 22);
  ASSERT_EQ(expected.first.size(), 4u);
  EXPECT_EQ(got.first, expected.first);
  ASSERT_EQ(got.second.size(), expected.second.size());
  EXPECT_EQ(0, std::memcmp(got.second.data(), expected.second.data(), got.second.size() * sizeof(float)));
  auto fresh_other = make(0, 256);
  observe(*fresh_other, 1, other_ctx, other_tokens, 0, 20);
  const DraftRequest r{1, other_tokens, &sp, nullptr, 4};
  Draft d;
  fresh_other->propose({&r, 1}, {&d, 1});
  const Drafted alone = drafted(*fresh_other, 0, d);
  EXPECT_EQ(got_other.first, alone.first);
  EXPECT_EQ(0, std::memcmp(got_other.second.data(), alone.second.data(), alone.second.size() * sizeof(float)));

  // A released slot starts again from position 0, whatever it had pending, and frees its KV.
  observe(*lived, 2, ctx, tokens, 21, 1);
  lived->release(2);
  lived->release(0);
  EXPECT_EQ(lived->kv_blocks_in_use(), 0);
  EXPECT_THROW(observe(*lived, 2, ctx, tokens, 5, 3), Error);
  observe(*lived, 2, ctx, tokens, 0, 21);
  const Drafted after_release = propose_one(*lived, 2, 22);
  EXPECT_EQ(after_release.first, expected.first);
  EXPECT_EQ(0, std::memcmp(after_release.second.data(), expected.second.data(),
                           expected.second.size() * sizeof(float)));
}

INSTANTIATE_TEST_SUITE_P(PendingPositions, Eagle3ProposerLived, ::testing::Values(0, 2, 5, -1),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                           return info.param < 0 ? std::string("Default") : "Pending" + std::to_string(info.param);
                         });

// ---- sampled output ----

TEST(Eagle3Sampling, OutputDistributionEqualsTargetWithAReducedVocabulary) {
  constexpr int64_t kVocab = 5;
  constexpr int kLength = 4;
  constexpr int kSamples = 24000;
  testing::TinyModelSpec spec;
  spec.vocab_size = kVocab;
  spec.num_layers = 4;
  spec.seed = 11;
  const auto target = testing::write_tiny_model_with_tokenizer(spec, "eagle3-stat-target", 'a');
  const ModelConfig tc = ModelConfig::from_file(target);
  // 4 of the 5 tokens: q is 0 on token 2, so acceptance and the residual both matter.
  const Eagle3Config c = testing::make_eagle3_config(tc, {1, 2, 4}, 4);
  testing::Eagle3WeightsSpec ws;
  ws.draft_ids = {0, 1, 3, 4};
  ws.seed = 23;
  const auto drafter = testing::write_random_eagle3(c, testing::make_temp_dir("eagle3-stat-drafter"), ws);
  SpeculatorOptions so;
  so.speculator = drafter.string();
  so.max_running = 16;
  const SpeculatorPlan plan(so, tc);
  TransformerOptions to;
  to.max_batch_tokens = 128;
  to.max_sequences = 16;
  auto plain_target = Transformer::load(target, to);
  to.capture_layers = plan.capture_layers();
  auto model = Transformer::load(target, to);
  const Tokenizer tok = Tokenizer::from_dir(target);
  for (const float temperature : {1.0f, 0.6f}) {
    SamplingParams sp;
    sp.temperature = temperature;
    const std::vector<int32_t> prompt = {1, 3, 4, 0};
    const std::vector<double> exact = testing::exact_continuations(*plain_target, prompt, sp, kVocab, kLength);
    Engine engine(*model, tok, EngineOptions{.max_running = 16, .max_batch_tokens = 128}, plan.build(*model));
    const std::vector<double> counts =
        testing::sampled_continuations(engine, prompt, sp, kVocab, kLength, kSamples, 9000);
    const double tv = testing::total_variation(counts, exact);
    const double limit = testing::tv_threshold(exact, kSamples);
    const SpecDecodeMetrics& m = engine.spec_metrics();
    std::printf("T %.1f: TV %.5f threshold %.5f tau %.3f\n", temperature, tv, limit, m.mean_acceptance_length());
    EXPECT_GT(m.num_accepted_tokens, 0);
    EXPECT_LT(m.acceptance_rate(), 1.0);
    EXPECT_LT(tv, limit) << "T " << temperature;
  }
}

}  // namespace
}  // namespace dspark
