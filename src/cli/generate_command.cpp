// dspark generate: one prompt in, streamed text out, then the numbers that matter
// (prompt tokens, generated tokens, TTFT, decode tokens/s).
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/check.h"
#include "core/threads.h"
#include "engine/engine.h"
#include "model/kv_pool.h"
#include "model/tokenizer.h"
#include "model/transformer.h"

namespace dspark::cli {
namespace {

struct GenerateArgs {
  std::string model_dir;
  std::string prompt;
  std::string prompt_file;
  std::string dtype = "bf16";
  std::string kv_dtype = "f32";
  int threads = 0;
  int64_t max_model_len = 0;
  int64_t prefill_chunk = 256;
  bool no_special_tokens = false;
  bool quiet = false;
  GenerationOptions gen;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DSPARK_CHECK(in.good(), "cannot read prompt file {}", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void run_generate(const GenerateArgs& args) {
  if (args.threads > 0) set_num_threads(args.threads);
  const std::filesystem::path dir(args.model_dir);
  DSPARK_CHECK(std::filesystem::is_directory(dir), "model directory '{}' does not exist", args.model_dir);
  const std::string prompt = args.prompt_file.empty() ? args.prompt : read_file(args.prompt_file);

  TransformerOptions options;
  options.compute = parse_dtype(args.dtype);
  options.max_batch_tokens = std::max<int64_t>(args.prefill_chunk, 1);
  options.max_sequences = 1;
  options.max_model_len = args.max_model_len;
  auto model = Transformer::load(dir, options);
  const Tokenizer tokenizer = Tokenizer::from_dir(dir);

  EngineOptions engine_options;
  engine_options.max_running = 1;
  engine_options.max_batch_tokens = options.max_batch_tokens;
  engine_options.prefill_chunk = options.max_batch_tokens;
  engine_options.kv_dtype = parse_dtype(args.kv_dtype);
  Engine engine(*model, tokenizer, engine_options);

  const std::vector<int32_t> prompt_ids = tokenizer.encode(prompt, !args.no_special_tokens);
  DSPARK_CHECK(!prompt_ids.empty(), "the prompt is empty and the tokenizer adds no BOS token");
  DSPARK_CHECK(static_cast<int64_t>(prompt_ids.size()) < model->max_model_len(),
               "the prompt has {} tokens but the model's context is {} tokens", prompt_ids.size(),
               model->max_model_len());

  const GenerationResult result = generate_one(engine, prompt_ids, args.gen, [](std::string_view piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  });
  std::fputc('\n', stdout);
  if (!args.quiet) {
    const int64_t n = static_cast<int64_t>(result.tokens.size());
    const double decode_s = result.total_seconds - result.ttft_seconds;
    std::fprintf(stderr,
                 "\n[dspark] prompt tokens: %lld | generated tokens: %lld | finish: %s\n"
                 "[dspark] TTFT: %.1f ms | decode: %.1f tokens/s | total: %.2f s | threads: %d | dtype: %s\n",
                 static_cast<long long>(result.prompt_tokens), static_cast<long long>(n),
                 std::string(finish_reason_name(result.finish_reason)).c_str(), result.ttft_seconds * 1e3,
                 n > 1 && decode_s > 0 ? (n - 1) / decode_s : 0.0, result.total_seconds, num_threads(),
                 args.dtype.c_str());
  }
}

}  // namespace

void register_generate(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate a completion for one prompt and print speed statistics");
  cmd->add_option("--model", args->model_dir, "Hugging Face model directory")->required();
  auto* prompt_opt = cmd->add_option("--prompt", args->prompt, "Prompt text");
  cmd->add_option("--prompt-file", args->prompt_file, "Read the prompt from a file")->excludes(prompt_opt);
  cmd->add_option("--max-tokens", args->gen.max_tokens, "Maximum generated tokens")->capture_default_str();
  cmd->add_option("--temperature", args->gen.sampling.temperature, "Sampling temperature (0 = greedy)")
      ->capture_default_str();
  cmd->add_option("--top-k", args->gen.sampling.top_k, "Keep the k most likely tokens (0 = off)")->capture_default_str();
  cmd->add_option("--top-p", args->gen.sampling.top_p, "Nucleus sampling mass (1 = off)")->capture_default_str();
  cmd->add_option("--min-p", args->gen.sampling.min_p, "Drop tokens below min-p x the top probability")
      ->capture_default_str();
  cmd->add_option("--repetition-penalty", args->gen.sampling.repetition_penalty, "Penalty for seen tokens (1 = off)")
      ->capture_default_str();
  cmd->add_option("--seed", args->gen.sampling.seed, "Random seed")->capture_default_str();
  cmd->add_option("--stop", args->gen.stop, "Stop string (repeatable)");
  cmd->add_flag("--ignore-eos", args->gen.ignore_eos, "Continue past the end-of-sequence token");
  cmd->add_option("--dtype", args->dtype, "Compute dtype: bf16 or f32")->capture_default_str();
  cmd->add_option("--kv-dtype", args->kv_dtype, "KV cache dtype: f32 or bf16")->capture_default_str();
  cmd->add_option("--threads", args->threads, "Threads (0 = OpenMP default)")->capture_default_str();
  cmd->add_option("--max-model-len", args->max_model_len, "Context length (0 = the model's)")->capture_default_str();
  cmd->add_option("--prefill-chunk", args->prefill_chunk, "Prompt tokens per forward pass")->capture_default_str();
  cmd->add_flag("--no-special-tokens", args->no_special_tokens, "Do not add BOS/EOS around the prompt");
  cmd->add_flag("--quiet", args->quiet, "Do not print statistics");
  cmd->callback([args] { run_generate(*args); });
}

}  // namespace dspark::cli
