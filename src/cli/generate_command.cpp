// dspark generate: one prompt in, streamed text out, then the numbers that matter
// (prompt tokens, generated tokens, TTFT, decode tokens/s). With --speculator, the same
// request also runs without speculation in the same process, and the two speeds are
// reported side by side (plus, for greedy requests, whether the outputs are identical).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "core/check.h"
#include "core/threads.h"
#include "engine/engine.h"
#include "engine/request_validation.h"

namespace dspark::cli {
namespace {

struct GenerateArgs {
  ModelArgs model;
  SpeculatorOptions speculator;
  GenerationOptions gen;
  std::string prompt;
  std::string prompt_file;
  bool no_special_tokens = false;
  bool quiet = false;
  int repeat = 1;  // speculative / plain pairs timed (the first one prints its text)
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DSPARK_CHECK(in.good(), "cannot read prompt file {}", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void print_stats(const char* label, const GenerationResult& r) {
  std::fprintf(stderr, "[dspark] %s: prompt tokens %lld | generated %zu | finish %s | TTFT %.1f ms | decode %.1f tokens/s\n",
               label, static_cast<long long>(r.prompt_tokens), r.tokens.size(),
               std::string(finish_reason_name(r.finish_reason)).c_str(), r.ttft_seconds * 1e3,
               r.decode_tokens_per_second());
}

void run_generate(GenerateArgs& args) {
  Assembly loaded = assemble(args.model, args.speculator, 1);
  const std::string prompt = args.prompt_file.empty() ? args.prompt : read_file(args.prompt_file);
  const std::vector<int32_t> prompt_ids = loaded.tokenizer->encode(prompt, !args.no_special_tokens);
  // Before building engines and warming them up: a bad request fails at once.
  validate_request(prompt_ids, args.gen, loaded.target->config().vocab_size, loaded.target->max_model_len());
  auto print_text = [](std::string_view piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  };

  const bool speculative = loaded.proposer != nullptr;
  Engine engine(*loaded.target, *loaded.tokenizer, loaded.engine, std::move(loaded.proposer));
  Engine plain(*loaded.target, *loaded.tokenizer, engine_options(args.model, 1));
  if (speculative && !args.quiet) {
    warm_up(engine, prompt_ids);
    warm_up(plain, prompt_ids);
  }
  const GenerationResult result = generate_one(engine, prompt_ids, args.gen, print_text);
  std::fputc('\n', stdout);
  if (args.quiet) return;

  std::fprintf(stderr, "\n");
  if (!speculative) {
    print_stats("plain", result);
    std::fprintf(stderr, "[dspark] threads %d | dtype %s | kv %s | total %.2f s\n", num_threads(),
                 args.model.dtype.c_str(), args.model.kv_dtype.c_str(),
                 result.total_seconds);
    return;
  }
  // The same request without speculation, measured in the same run.
  const GenerationResult baseline = generate_one(plain, prompt_ids, args.gen);
  const SpecDecodeMetrics& m = result.spec_metrics;
  print_stats("speculative", result);
  print_stats("plain      ", baseline);
  std::fprintf(stderr, "[dspark] speculator %s, K=%d: tau %.3f (rounds with drafts %lld, draft tokens %lld, accepted %lld)\n",
               args.speculator.speculator.c_str(), engine.proposer()->num_speculative_tokens(), m.mean_acceptance_length(),
               static_cast<long long>(m.num_drafts), static_cast<long long>(m.num_draft_tokens),
               static_cast<long long>(m.num_accepted_tokens));
  std::fprintf(stderr, "[dspark] acceptance per position: %s\n", format_position_rates(m).c_str());
  // One short request takes a fraction of a second, less than this machine's speed swings:
  // with --repeat the pairs alternate and the median of their ratios is reported.
  auto ratio = [](const GenerationResult& spec, const GenerationResult& base) {
    return base.decode_tokens_per_second() > 0 ? spec.decode_tokens_per_second() / base.decode_tokens_per_second()
                                               : 0.0;
  };
  std::vector<double> ratios = {ratio(result, baseline)};
  bool identical = result.tokens == baseline.tokens;
  for (int i = 1; i < args.repeat; ++i) {
    const GenerationResult spec = generate_one(engine, prompt_ids, args.gen);
    const GenerationResult base = generate_one(plain, prompt_ids, args.gen);
    ratios.push_back(ratio(spec, base));
    identical = identical && spec.tokens == base.tokens && spec.tokens == result.tokens;
  }
  std::sort(ratios.begin(), ratios.end());
  std::fprintf(stderr, "[dspark] decode speedup over plain: %.2fx", ratios[ratios.size() / 2]);
  if (ratios.size() > 1) {
    std::fprintf(stderr, " (median of %zu interleaved pairs, %.2fx-%.2fx)", ratios.size(), ratios.front(),
                 ratios.back());
  }
  if (args.gen.sampling.greedy() || args.gen.sampling.position_keyed) {
    std::fprintf(stderr, " | %s outputs identical: %s", args.gen.sampling.greedy() ? "greedy" : "seeded",
                 identical ? "yes" : "NO");
  }
  std::fprintf(stderr, "\n");
}

}  // namespace

void register_generate(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  args->gen.sampling.temperature = 0.0f;
  CLI::App* cmd = app.add_subcommand("generate", "Generate a completion for one prompt and print speed statistics");
  add_model_options(cmd, args->model);
  auto* prompt_opt = cmd->add_option("--prompt", args->prompt, "Prompt text");
  cmd->add_option("--prompt-file", args->prompt_file, "Read the prompt from a file")->excludes(prompt_opt);
  add_generation_options(cmd, args->gen);
  add_speculator_options(cmd, args->speculator);
  cmd->add_flag("--no-special-tokens", args->no_special_tokens, "Do not add BOS/EOS around the prompt");
  cmd->add_flag("--quiet", args->quiet, "Do not print statistics");
  cmd->add_option("--repeat", args->repeat,
                  "With a speculator: time this many speculative / plain pairs, alternating, and report the median "
                  "speedup")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->callback([args] { run_generate(*args); });
}

}  // namespace dspark::cli
