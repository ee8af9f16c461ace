// dspark eval: offline acceptance and speed per domain. Every prompt of a dataset runs
// twice in the same process, alternating — once with the speculator, once without — so
// the speedup is a ratio measured side by side. Prints per domain: mean acceptance
// length tau, acceptance per position, decode tokens/s of both runs and their ratio, and
// (greedy) whether every output was identical and, for drafters with a confidence head,
// predicted vs observed survival per position; optionally writes the table as JSON. A
// dataset whose prompts fall in several domains (MT-bench's categories) also gets a row of
// its own, its domains pooled: the eval set as a whole, as acceptance goals are stated.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "loadgen/dataset.h"
#include "cli/commands.h"
#include "cli/model_options.h"
#include "core/check.h"
#include "core/clock.h"
#include "engine/engine.h"

namespace dspark::cli {
namespace {

struct EvalArgs {
  ModelArgs model;
  SpeculatorOptions speculator;
  GenerationOptions gen;
  std::vector<std::string> datasets;
  int64_t limit = 0;
  std::string json_path;
  bool no_baseline = false;
};

struct DomainStats {
  int64_t prompts = 0;
  int64_t mismatches = 0;
  int64_t spec_tokens = 0, plain_tokens = 0;
  double spec_decode_s = 0, plain_decode_s = 0;  // time after the first token
  double spec_total_s = 0, plain_total_s = 0;
  // Where the speculative runs' step time went (ScheduleMetrics): target forwards, the
  // drafter's propose() and its context upkeep (observe / catch_up).
  double forward_s = 0, draft_s = 0, context_s = 0;
  int64_t spec_steps = 0;
  // The plain runs' target forwards and engine steps, beside them.
  double plain_forward_s = 0;
  int64_t plain_steps = 0;
  std::vector<double> stage_s;  // draft_s by the proposer's stages (Proposer::stage_seconds)
  SpecDecodeMetrics metrics;

  double spec_tps() const { return spec_decode_s > 0 ? spec_tokens / spec_decode_s : 0; }
  double plain_tps() const { return plain_decode_s > 0 ? plain_tokens / plain_decode_s : 0; }
};

// One --dataset file, its domains pooled.
struct DatasetStats {
  std::string name;                  // the file's stem
  std::vector<std::string> domains;  // in first-seen order
  int64_t prompts = 0;
  SpecDecodeMetrics metrics;
};

void add_run(const GenerationResult& r, int64_t& tokens, double& decode_s, double& total_s) {
  tokens += r.tokens.size() > 1 ? static_cast<int64_t>(r.tokens.size()) - 1 : 0;
  decode_s += r.total_seconds - r.ttft_seconds;
  total_s += r.total_seconds;
}

void print_calibration(const std::string& name, const SpecDecodeMetrics& m) {
  std::string line = fmt::format("{:<14}", name);
  for (int32_t j = 0; j < m.max_positions(); ++j) {
    if (m.calibration_rounds[static_cast<size_t>(j)] == 0) break;
    line += fmt::format(" {:.2f}/{:.2f}", m.predicted_survival(j), m.observed_survival(j));
  }
  std::printf("%s\n", line.c_str());
}

// What the engine's calibrator learned by the end of the run (spec/confidence_calibrator.h).
void print_learned_offsets(const ConfidenceCalibrator& calibrator) {
  bool header = false;
  for (int s = 0; s < kNumConfidenceSources; ++s) {
    for (const bool greedy : {true, false}) {
      const auto source = static_cast<ConfidenceSource>(s);
      const int32_t n = calibrator.num_positions(source, greedy);
      if (n == 0) continue;
      if (!header) std::printf("\nconfidence offsets learned from verified rounds (logit, per draft position)\n");
      header = true;
      std::string line = fmt::format("{:<26} {:<8}", confidence_source_name(source), greedy ? "greedy" : "sampled");
      for (int32_t j = 0; j < n; ++j) line += fmt::format(" {:+.2f}", calibrator.offset(source, greedy, j));
      std::printf("%s\n", line.c_str());
    }
  }
}

nlohmann::json calibration_json(const SpecDecodeMetrics& m) {
  if (!m.has_calibration()) return nullptr;
  nlohmann::json predicted = nlohmann::json::array(), observed = nlohmann::json::array(),
                 rounds = nlohmann::json::array();
  for (int32_t j = 0; j < m.max_positions(); ++j) {
    predicted.push_back(m.predicted_survival(j));
    observed.push_back(m.observed_survival(j));
    rounds.push_back(m.calibration_rounds[static_cast<size_t>(j)]);
  }
  return {{"predicted_survival", predicted}, {"observed_survival", observed}, {"rounds", rounds}};
}

// A domain's or a pooled eval set's acceptance: τ, the counts it comes from, per position.
nlohmann::json acceptance_json(const SpecDecodeMetrics& m) {
  nlohmann::json per_position = nlohmann::json::array();
  for (int32_t i = 0; i < m.max_positions(); ++i) per_position.push_back(m.position_acceptance_rate(i));
  return {{"tau", m.mean_acceptance_length()}, {"num_drafts", m.num_drafts}, {"num_draft_tokens", m.num_draft_tokens},
          {"num_accepted_tokens", m.num_accepted_tokens}, {"acceptance_per_position", per_position},
          {"calibration", calibration_json(m)}};
}

nlohmann::json stage_json(const std::vector<ProposerStage>& stages, const std::vector<double>& seconds) {
  nlohmann::json json = nlohmann::json::object();
  for (size_t k = 0; k < stages.size(); ++k) json[stages[k].name] = seconds[k];
  return json;
}

// The drafter's propose() time per round with drafts, by stage.
void print_stages(const std::vector<ProposerStage>& stages, const std::vector<std::string>& order,
                  const std::map<std::string, DomainStats>& domains) {
  std::string header = "\ndrafter propose() per round with drafts, by stage (ms):";
  for (size_t k = 0; k < stages.size(); ++k) header += fmt::format("{}{}", k == 0 ? " " : " | ", stages[k].name);
  std::printf("%s\n", header.c_str());
  std::vector<double> all(stages.size());
  int64_t all_rounds = 0;
  auto line = [&](const std::string& name, const std::vector<double>& seconds, int64_t rounds) {
    if (rounds == 0) return;
    std::string text = fmt::format("{:<14}", name);
    for (size_t k = 0; k < seconds.size(); ++k) text += fmt::format("{}{:8.3f}", k == 0 ? " " : " | ", 1e3 * seconds[k] / rounds);
    std::printf("%s\n", text.c_str());
  };
  for (const std::string& name : order) {
    const DomainStats& d = domains.at(name);
    line(name, d.stage_s, d.metrics.num_drafts);
    for (size_t k = 0; k < all.size(); ++k) all[k] += d.stage_s[k];
    all_rounds += d.metrics.num_drafts;
  }
  line("all", all, all_rounds);
}

void run_eval(EvalArgs& args) {
  DSPARK_CHECK(!args.datasets.empty(), "give at least one --dataset");
  Assembly loaded = assemble(args.model, args.speculator, 1);
  Engine spec(*loaded.target, *loaded.tokenizer, loaded.engine, std::move(loaded.proposer));
  Engine plain(*loaded.target, *loaded.tokenizer, engine_options(args.model, 1));
  const bool speculative = spec.proposer() != nullptr;
  const int32_t num_spec_tokens = speculative ? spec.proposer()->num_speculative_tokens() : 0;
  // The proposer's propose() stages, when it breaks its time down.
  const std::vector<ProposerStage> stages = speculative ? spec.proposer()->stage_seconds() : std::vector<ProposerStage>{};
  auto stage_seconds_now = [&] {
    std::vector<double> seconds;
    for (const ProposerStage& stage : spec.proposer()->stage_seconds()) seconds.push_back(stage.seconds);
    return seconds;
  };
  // Greedy and seeded (position-keyed) runs must give the plain run's tokens exactly.
  const bool reproducible = args.gen.sampling.greedy() || args.gen.sampling.position_keyed;

  bool warmed_up = false;
  std::vector<std::string> order;
  std::map<std::string, DomainStats> domains;
  std::vector<DatasetStats> datasets;
  for (const std::string& path : args.datasets) {
    const std::vector<DatasetPrompt> prompts = load_dataset(path, args.limit);
    DatasetStats& set = datasets.emplace_back(DatasetStats{.name = std::filesystem::path(path).stem().string(),
                                                           .domains = {},
                                                           .metrics = SpecDecodeMetrics(num_spec_tokens)});
    for (size_t i = 0; i < prompts.size(); ++i) {
      const DatasetPrompt& p = prompts[i];
      std::vector<int32_t> ids = loaded.tokenizer->encode(p.text, true);
      if (static_cast<int64_t>(ids.size()) + args.gen.max_tokens > loaded.target->max_model_len()) {
        std::fprintf(stderr, "[dspark] skipping %s/%s: prompt of %zu tokens does not leave room for %lld\n",
                     p.domain.c_str(), p.id.c_str(), ids.size(), static_cast<long long>(args.gen.max_tokens));
        continue;
      }
      if (!domains.contains(p.domain)) {
        order.push_back(p.domain);
        domains.emplace(p.domain, DomainStats{.stage_s = std::vector<double>(stages.size()),
                                              .metrics = SpecDecodeMetrics(num_spec_tokens)});
      }
      if (!warmed_up) {
        warm_up(spec, ids);
        warm_up(plain, ids);
        warmed_up = true;
      }
      DomainStats& d = domains[p.domain];
      const ScheduleMetrics before = spec.schedule_metrics();
      const std::vector<double> stages_before = stages.empty() ? std::vector<double>{} : stage_seconds_now();
      const GenerationResult s = generate_one(spec, ids, args.gen);
      if (!stages.empty()) {
        const std::vector<double> stages_after = stage_seconds_now();
        for (size_t k = 0; k < stages.size(); ++k) d.stage_s[k] += stages_after[k] - stages_before[k];
      }
      add_run(s, d.spec_tokens, d.spec_decode_s, d.spec_total_s);
      const ScheduleMetrics& after = spec.schedule_metrics();
      d.forward_s += after.forward_seconds - before.forward_seconds;
      d.draft_s += after.draft_seconds - before.draft_seconds;
      d.context_s += after.context_seconds - before.context_seconds;
      d.spec_steps += after.steps - before.steps;
      d.metrics.merge(s.spec_metrics);
      if (!args.no_baseline && speculative) {
        const ScheduleMetrics plain_before = plain.schedule_metrics();
        const GenerationResult b = generate_one(plain, ids, args.gen);
        d.plain_forward_s += plain.schedule_metrics().forward_seconds - plain_before.forward_seconds;
        d.plain_steps += plain.schedule_metrics().steps - plain_before.steps;
        add_run(b, d.plain_tokens, d.plain_decode_s, d.plain_total_s);
        if (reproducible && b.tokens != s.tokens) ++d.mismatches;
      }
      ++d.prompts;
      set.metrics.merge(s.spec_metrics);
      ++set.prompts;
      if (std::find(set.domains.begin(), set.domains.end(), p.domain) == set.domains.end()) set.domains.push_back(p.domain);
      std::fprintf(stderr, "\r[dspark] %s: %zu/%zu prompts, tau %.2f   ", p.domain.c_str(), i + 1, prompts.size(),
                   d.metrics.mean_acceptance_length());
    }
  }
  std::fprintf(stderr, "\n");

  std::printf("%-14s %7s %6s %9s %9s %8s %9s  %s\n", "domain", "prompts", "tau", "spec t/s", "plain t/s", "speedup",
              "identical", "acceptance per position");
  nlohmann::json json = nlohmann::json::array();
  SpecDecodeMetrics all(num_spec_tokens);
  for (const std::string& name : order) {
    const DomainStats& d = domains[name];
    all.merge(d.metrics);
    const double speedup = d.plain_tps() > 0 ? d.spec_tps() / d.plain_tps() : 0;
    const std::string identical =
        !reproducible || args.no_baseline ? "-" : (d.mismatches == 0 ? "yes" : std::to_string(d.mismatches) + " differ");
    std::printf("%-14s %7lld %6.3f %9.1f %9.1f %7.2fx %9s  %s\n", name.c_str(), static_cast<long long>(d.prompts),
                d.metrics.mean_acceptance_length(), d.spec_tps(), d.plain_tps(), speedup, identical.c_str(),
                format_position_rates(d.metrics).c_str());
    nlohmann::json row = acceptance_json(d.metrics);
    row.update({{"domain", name}, {"prompts", d.prompts},
                {"spec_decode_tokens_per_s", d.spec_tps()}, {"plain_decode_tokens_per_s", d.plain_tps()},
                {"speedup", speedup}, {"greedy_mismatches", d.mismatches},
                {"spec_total_s", d.spec_total_s}, {"plain_total_s", d.plain_total_s},
                {"target_forward_s", d.forward_s}, {"drafter_propose_s", d.draft_s},
                {"drafter_context_s", d.context_s}, {"drafter_stage_s", stage_json(stages, d.stage_s)},
                {"spec_steps", d.spec_steps}, {"plain_target_forward_s", d.plain_forward_s},
                {"plain_steps", d.plain_steps}});
    json.push_back(std::move(row));
  }
  std::printf("%-14s %7s %6.3f\n", "all", "", all.mean_acceptance_length());
  const auto pooled = [](const DatasetStats& set) { return set.domains.size() > 1; };
  nlohmann::json json_sets = nlohmann::json::array();
  for (const DatasetStats& set : datasets) {
    if (!pooled(set)) continue;
    if (json_sets.empty()) std::printf("\neval sets of several domains, pooled\n");
    // Rates in the domain rows' column (68 characters in), however long the file's name.
    std::string line = fmt::format("{:<14} {:7d} {:6.3f}", set.name, set.prompts, set.metrics.mean_acceptance_length());
    line.resize(std::max<size_t>(line.size() + 1, 68), ' ');
    std::printf("%s  %s\n", line.c_str(), format_position_rates(set.metrics).c_str());
    nlohmann::json row = acceptance_json(set.metrics);
    row.update({{"dataset", set.name}, {"domains", set.domains}, {"prompts", set.prompts}});
    json_sets.push_back(std::move(row));
  }
  if (speculative) {
    // Per verification round: what the drafter costs next to the target's step.
    std::printf("\ntime per round with drafts (ms): target forwards (prefill included) | drafter propose + context = drafter / target\n");
    double forward = 0, drafter = 0;
    int64_t rounds = 0;
    auto line = [](const std::string& name, double fwd, double drf, int64_t n) {
      if (n == 0) return;
      std::printf("%-14s %8.3f | %8.3f = %.3f\n", name.c_str(), 1e3 * fwd / n, 1e3 * drf / n, fwd > 0 ? drf / fwd : 0.0);
    };
    for (const std::string& name : order) {
      const DomainStats& d = domains[name];
      line(name, d.forward_s, d.draft_s + d.context_s, d.metrics.num_drafts);
      forward += d.forward_s;
      drafter += d.draft_s + d.context_s;
      rounds += d.metrics.num_drafts;
    }
    line("all", forward, drafter, rounds);
    if (args.model.spec_schedule == "adaptive") {
      std::printf("target decoding steps' time / the step-cost profile's: %.2f (at the end; the adaptive schedule "
                  "weighs the drafter's time by it)\n",
                  spec.schedule_metrics().step_time_ratio);
    }
    if (args.gen.response_format != ResponseFormat::kText) {
      std::printf("constrained output: %lld drafts cut by its grammar before verification, %lld verified\n",
                  static_cast<long long>(spec.schedule_metrics().grammar_cut_drafts),
                  static_cast<long long>(all.num_draft_tokens));
    }
    if (!stages.empty()) print_stages(stages, order, domains);
  }
  if (all.has_calibration()) {
    std::printf("\nconfidence calibration: predicted survival prod(c_1..c_j) / observed (drafts 1..j accepted)\n");
    for (const std::string& name : order) print_calibration(name, domains[name].metrics);
    print_calibration("all", all);
    for (const DatasetStats& set : datasets)
      if (pooled(set)) print_calibration(set.name, set.metrics);
    print_learned_offsets(spec.confidence_calibrator());
  }
  if (!args.json_path.empty()) {
    std::ofstream(args.json_path) << nlohmann::json{{"speculator", args.speculator.speculator},
                                                    {"num_speculative_tokens", num_spec_tokens},
                                                    {"temperature", args.gen.sampling.temperature},
                                                    {"max_tokens", args.gen.max_tokens},
                                                    {"step_time_ratio", spec.schedule_metrics().step_time_ratio},
                                                    {"grammar_cut_drafts", spec.schedule_metrics().grammar_cut_drafts},
                                                    // [L]: request-rounds that verified L drafts
                                                    {"verified_length_counts",
                                                     spec.schedule_metrics().verified_length_counts},
                                                    {"domains", json},
                                                    {"pooled_datasets", json_sets}}
                                         .dump(2);
  }
}

}  // namespace

void register_eval(CLI::App& app) {
  auto args = std::make_shared<EvalArgs>();
  args->gen.sampling.temperature = 0.0f;
  CLI::App* cmd = app.add_subcommand("eval", "Acceptance length and speedup per domain over dataset prompts");
  add_model_options(cmd, args->model);
  add_generation_options(cmd, args->gen);
  add_speculator_options(cmd, args->speculator);
  cmd->add_option("--dataset", args->datasets, "JSONL prompt file (repeatable)")->required();
  cmd->add_option("--limit", args->limit, "Prompts per dataset (0 = all)")->capture_default_str();
  cmd->add_option("--json", args->json_path, "Also write the table as JSON here");
  cmd->add_flag("--no-baseline", args->no_baseline, "Skip the plain-decoding runs (no speedup column)");
  cmd->callback([args] { run_eval(*args); });
}

}  // namespace dspark::cli
