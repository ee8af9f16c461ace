// dspark bench: load generator against any OpenAI-compatible server. Prompts come from
// dataset files (bench/dataset.h); every level (closed-loop concurrency, or Poisson
// request rate) sends --num-prompts streaming requests and reports TTFT, TPOT, ITL,
// output tokens/s, requests/s and tau (bench/bench_report.h). A table goes to stdout, a
// progress line to stderr, and with --json the same numbers to a file.
// --multi-turn sends whole conversations instead (bench/multi_turn.h): every turn after the
// first repeats the conversation so far, and the table is per turn with the server's
// prefix-cache hit rate.
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loadgen/dataset.h"
#include "loadgen/load_generator.h"
#include "loadgen/multi_turn.h"
#include "cli/commands.h"
#include "core/check.h"
#include "core/clock.h"

namespace dspark::cli {
namespace {

struct BenchArgs {
  LoadOptions load;
  std::vector<std::string> datasets;
  int64_t dataset_limit = 0;
  std::vector<int64_t> concurrency;
  std::vector<double> rates;
  int64_t num_prompts = 64;
  std::string json_path;
  bool no_warm_up = false;
  bool multi_turn = false;
};

ProgressCallback progress_line(const std::string& label) {
  const double start = now_seconds();
  auto last = std::make_shared<double>(0.0);
  return [label, start, last](int64_t done, int64_t failed, int64_t total) {
    const double now = now_seconds();
    if (done < total && now - *last < 0.25) return;  // at most four updates a second
    *last = now;
    std::fprintf(stderr, "\r[bench] %s: %lld/%lld done, %lld failed, %.1f s   ", label.c_str(),
                 static_cast<long long>(done), static_cast<long long>(total), static_cast<long long>(failed),
                 now - start);
    std::fflush(stderr);
  };
}

void write_json(const std::string& path, const nlohmann::json& value) {
  std::ofstream out(path);
  DSPARK_CHECK(out.good(), "cannot write {}", path);
  // Generated texts (multi-turn answers) may hold invalid UTF-8; replace rather than fail.
  out << value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

// --multi-turn: every conversation of the datasets at each concurrency level. Levels after
// the first run conversations the server has already seen (and may have cached).
void run_multi_turn_bench(BenchArgs& args) {
  DSPARK_CHECK(args.rates.empty(), "--multi-turn runs closed-loop levels only (--concurrency), not --request-rate");
  if (args.concurrency.empty()) args.concurrency = {1};
  for (int64_t c : args.concurrency) DSPARK_CHECK(c >= 1, "--concurrency levels must be >= 1, got {}", c);

  std::vector<Conversation> conversations;
  for (const std::string& path : args.datasets) {
    for (Conversation& c : load_conversations(path, args.dataset_limit)) conversations.push_back(std::move(c));
  }
  DSPARK_CHECK(!conversations.empty(), "the datasets hold no conversations");
  std::vector<std::string> first_turns;
  for (const Conversation& c : conversations) first_turns.push_back(multi_turn_prompt(c, {}));
  LoadGenerator generator(args.load, std::move(first_turns));
  generator.resolve_model();
  const LoadOptions& o = generator.options();
  std::fprintf(stderr, "[bench] multi-turn: %s %s, model '%s', %zu conversations, max_tokens %lld, temperature %g\n",
               o.url.c_str(), o.endpoint.c_str(), o.model.c_str(), conversations.size(),
               static_cast<long long>(o.max_tokens), o.temperature);
  if (!args.no_warm_up) {
    // Not a dataset prompt, so that no conversation's history is cached before it is measured.
    const RequestRecord warm = generator.send("Question: What is a warm-up?\nAnswer:");
    DSPARK_CHECK(warm.ok, "the warm-up request failed: {}", warm.error);
  }

  nlohmann::json levels = nlohmann::json::array();
  for (int64_t c : args.concurrency) {
    const MultiTurnResult r =
        run_multi_turn(generator, conversations, c, progress_line(fmt::format("multi-turn concurrency {}", c)));
    std::fprintf(stderr, "\n");
    std::fputs(format_multi_turn_table(r).c_str(), stdout);
    std::fflush(stdout);
    for (const TurnSummary& t : r.turns) {
      if (t.num_failed == 0) continue;
      std::fprintf(stderr, "[bench] turn %lld: first failure: %s\n", static_cast<long long>(t.turn),
                   t.first_error.c_str());
    }
    levels.push_back(to_json(r));
  }
  if (!args.json_path.empty()) {
    write_json(args.json_path, {{"mode", "multi_turn"},
                                {"url", o.url},
                                {"endpoint", o.endpoint},
                                {"model", o.model},
                                {"max_tokens", o.max_tokens},
                                {"temperature", o.temperature},
                                {"ignore_eos", o.ignore_eos},
                                {"num_conversations", conversations.size()},
                                {"datasets", args.datasets},
                                {"levels", levels}});
  }
}

void run_bench(BenchArgs& args) {
  DSPARK_CHECK(!args.datasets.empty(), "give at least one --dataset");
  if (args.multi_turn) {
    run_multi_turn_bench(args);
    return;
  }
  DSPARK_CHECK(args.num_prompts >= 1, "--num-prompts must be >= 1, got {}", args.num_prompts);
  DSPARK_CHECK(args.concurrency.empty() || args.rates.empty(), "give --concurrency or --request-rate, not both");
  if (args.concurrency.empty() && args.rates.empty()) args.concurrency = {1};
  for (int64_t c : args.concurrency) DSPARK_CHECK(c >= 1, "--concurrency levels must be >= 1, got {}", c);
  for (double r : args.rates) DSPARK_CHECK(r > 0, "--request-rate levels must be > 0, got {}", r);

  std::vector<std::string> prompts;
  for (const std::string& path : args.datasets) {
    for (DatasetPrompt& p : load_dataset(path, args.dataset_limit)) prompts.push_back(std::move(p.text));
  }
  LoadGenerator generator(args.load, std::move(prompts));
  generator.resolve_model();
  const LoadOptions& o = generator.options();
  std::fprintf(stderr, "[bench] %s %s, model '%s', %lld requests per level, max_tokens %lld, temperature %g\n",
               o.url.c_str(), o.endpoint.c_str(), o.model.c_str(), static_cast<long long>(args.num_prompts),
               static_cast<long long>(o.max_tokens), o.temperature);
  if (!args.no_warm_up) {
    const RequestRecord warm = generator.warm_up();
    DSPARK_CHECK(warm.ok, "the warm-up request failed: {}", warm.error);
  }

  std::vector<LevelResult> results;
  for (int64_t c : args.concurrency) {
    results.push_back(generator.run_closed_loop(c, args.num_prompts, progress_line(fmt::format("concurrency {}", c))));
    std::fprintf(stderr, "\n");
  }
  for (double r : args.rates) {
    results.push_back(generator.run_open_loop(r, args.num_prompts, progress_line(fmt::format("rate {:g}/s", r))));
    std::fprintf(stderr, "\n");
  }
  std::fputs(format_table(results).c_str(), stdout);
  for (const LevelResult& l : results) {
    if (l.num_failed > 0) std::fprintf(stderr, "[bench] %s %g: first failure: %s\n", l.mode.c_str(), l.level, l.first_error.c_str());
  }
  if (!args.json_path.empty()) {
    nlohmann::json levels = nlohmann::json::array();
    for (const LevelResult& l : results) levels.push_back(to_json(l));
    write_json(args.json_path, {{"url", o.url},
                                {"endpoint", o.endpoint},
                                {"model", o.model},
                                {"max_tokens", o.max_tokens},
                                {"temperature", o.temperature},
                                {"ignore_eos", o.ignore_eos},
                                {"num_prompts", args.num_prompts},
                                {"seed", o.seed},
                                {"datasets", args.datasets},
                                {"levels", levels}});
  }
}

}  // namespace

void register_bench(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand("bench", "Load generator for OpenAI-compatible servers (TTFT, TPOT, tokens/s, tau)");
  cmd->add_option("--url", args->load.url, "Server base URL")->capture_default_str();
  cmd->add_option("--endpoint", args->load.endpoint, "completions or chat")->capture_default_str();
  cmd->add_option("--model", args->load.model, "Model name to request (default: the server's first model)");
  cmd->add_option("--dataset", args->datasets, "JSONL prompt file (repeatable)")->required();
  cmd->add_option("--dataset-limit", args->dataset_limit, "Prompts read per dataset file (0 = all)")
      ->capture_default_str();
  cmd->add_option("--concurrency", args->concurrency, "Closed-loop levels, e.g. 1,4,16")->delimiter(',');
  cmd->add_option("--request-rate", args->rates, "Open-loop Poisson levels in requests/s, e.g. 2,8")->delimiter(',');
  cmd->add_option("--num-prompts", args->num_prompts, "Requests per level")->capture_default_str();
  cmd->add_option("--max-tokens", args->load.max_tokens, "max_tokens per request")->capture_default_str();
  cmd->add_option("--temperature", args->load.temperature, "Sampling temperature (0 = greedy)")->capture_default_str();
  cmd->add_flag("--ignore-eos", args->load.ignore_eos, "Ask the server to generate max_tokens every time");
  cmd->add_option("--seed", args->load.seed, "Seed of the prompt order and the arrival times")->capture_default_str();
  cmd->add_option("--timeout", args->load.timeout_s, "Per-request timeout in seconds")->capture_default_str();
  cmd->add_option("--json", args->json_path, "Also write the results as JSON here");
  cmd->add_flag("--no-warm-up", args->no_warm_up, "Skip the unmeasured first request");
  cmd->add_flag("--multi-turn", args->multi_turn,
                "Send whole conversations (MT-bench 'turns'), each turn repeating the earlier ones with their "
                "answers; report per turn and the prefix-cache hit rate (--num-prompts, --seed unused)");
  cmd->callback([args] { run_bench(*args); });
}

}  // namespace dspark::cli
