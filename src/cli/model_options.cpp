#include "cli/model_options.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/huge_pages.h"
#include "core/threads.h"
#include "engine/step_profile.h"
#include "kernels/isa.h"
#include "model/load_quantization.h"
#include "spec/tail_match.h"
#include "structured/json_schema.h"
#include "structured/gbnf_grammar.h"
#include "structured/regex_dfa.h"

namespace dspark::cli {

void add_model_options(CLI::App* cmd, ModelArgs& a) {
  cmd->add_option("--model", a.model_dir, "Hugging Face model directory")->required();
  cmd->add_option("--dtype", a.dtype,
                  "Compute dtype: auto (the checkpoint's torch_dtype: float32 -> f32, else bf16), bf16 or f32")
      ->check(CLI::IsMember({"auto", "bf16", "f32", "bfloat16", "float32"}))
      ->capture_default_str();
  // Resolved once the command line is read, so every command sees concrete dtypes. The KV
  // cache follows the compute dtype unless asked otherwise (as vLLM's kv_cache_dtype auto
  // follows the model's): bf16 rows read half the bytes of f32 ones, and a bf16 model's
  // perplexity and acceptance do not change with it (docs/results.md).
  cmd->parse_complete_callback([&a] {
    if (a.dtype == "auto") a.dtype = auto_compute_dtype(a.model_dir);
    if (a.kv_dtype == "auto") a.kv_dtype = std::string(dtype_name(parse_dtype(a.dtype)));
    if (a.quantization == "auto") {
      a.quantization = quantization_name(configured_quantization(a.model_dir).value_or(WeightQuantization::kNone));
    }
  });
  cmd->add_option("--kv-dtype", a.kv_dtype, "KV cache dtype: auto (the compute dtype), bf16 or f32")
      ->check(CLI::IsMember({"auto", "bf16", "f32", "bfloat16", "float32"}))
      ->capture_default_str();
  cmd->add_option("--isa", a.isa,
                  "Kernel ISA: auto, avx2, avxvnni, avx512, avx512bf16, vnni, avx512fp16 or amx "
                  "(a cap; DSPARK_ISA when auto)")
      ->check(CLI::IsMember({"auto", "avx2", "avxvnni", "avx512", "avx512bf16", "vnni", "avx512fp16", "amx"}))
      ->capture_default_str();
  cmd->add_option("--quantization", a.quantization,
                  "Matmul weights: auto (the model config's \"quantization\", else none), none, int8 or int4 "
                  "(quantized at load)")
      ->check(CLI::IsMember({"auto", "none", "int8", "int4"}))
      ->capture_default_str();
  cmd->add_option("--threads", a.threads, "Threads (0 = OpenMP default)")->capture_default_str();
  cmd->add_option("--max-model-len", a.max_model_len, "Context length (0 = the model's)")->capture_default_str();
  cmd->add_option("--max-batch-tokens", a.max_batch_tokens, "Tokens per forward pass (prefill chunk)")
      ->capture_default_str();
  cmd->add_option("--spec-schedule", a.spec_schedule,
                  "Drafts verified per step: fixed (all) or adaptive (hardware-aware prefix scheduler)")
      ->check(CLI::IsMember({"fixed", "adaptive"}))
      ->capture_default_str();
  cmd->add_flag("--reprofile", a.reprofile, "Measure the step-cost profile again (adaptive schedule)");
  cmd->add_flag("--no-confidence-adaptation", a.no_confidence_adaptation,
                "Use the drafter's confidences as calibrated, instead of correcting them by what verified "
                "drafts taught (per draft position and source over all requests; each request's own for repeat "
                "lookup)");
  cmd->add_flag("--no-prefix-caching", a.no_prefix_caching,
                "Compute every prompt in full instead of reusing the KV blocks of prefixes computed before");
}

namespace {

// "ID=BIAS" as a (token id, bias) pair (SamplingParams::validate checks the range when the
// request runs).
std::pair<int32_t, float> parse_logit_bias(const std::string& entry) {
  const size_t eq = entry.find('=');
  int32_t id = -1;
  float bias = 0.0f;
  const bool parsed = eq != std::string::npos && eq > 0 && eq + 1 < entry.size() &&
                      std::from_chars(entry.data(), entry.data() + eq, id).ptr == entry.data() + eq &&
                      std::from_chars(entry.data() + eq + 1, entry.data() + entry.size(), bias).ptr ==
                          entry.data() + entry.size();
  if (!parsed || id < 0) throw CLI::ValidationError("--logit-bias", "expected TOKEN_ID=BIAS, got '" + entry + "'");
  return {id, bias};
}

}  // namespace

void add_generation_options(CLI::App* cmd, GenerationOptions& g) {
  cmd->add_option("--max-tokens", g.max_tokens, "Maximum generated tokens")->capture_default_str();
  cmd->add_option("--temperature", g.sampling.temperature, "Sampling temperature (0 = greedy)")->capture_default_str();
  cmd->add_option("--top-k", g.sampling.top_k, "Keep the k most likely tokens (0 = off)")->capture_default_str();
  cmd->add_option("--top-p", g.sampling.top_p, "Nucleus sampling mass (1 = off)")->capture_default_str();
  cmd->add_option("--min-p", g.sampling.min_p, "Drop tokens below min-p x the top probability")->capture_default_str();
  cmd->add_option("--repetition-penalty", g.sampling.repetition_penalty, "Penalty for seen tokens (1 = off)")
      ->capture_default_str();
  cmd->add_option("--presence-penalty", g.sampling.presence_penalty,
                  "Subtracted from the logit of every token generated so far ([-2, 2], 0 = off)")
      ->capture_default_str();
  cmd->add_option("--frequency-penalty", g.sampling.frequency_penalty,
                  "Subtracted per occurrence in the generated text ([-2, 2], 0 = off)")
      ->capture_default_str();
  // An explicit seed switches to position-keyed sampling: the same text with or without a
  // speculator, under any schedule (spec/rejection_sampler.h).
  cmd->add_option("--seed", g.sampling.seed,
                  "Random seed; when given, sampling is keyed on (seed, position), so the output is the same "
                  "with or without speculation")
      ->each([&g](const std::string&) { g.sampling.position_keyed = true; })
      ->capture_default_str();
  cmd->add_option_function<std::vector<std::string>>(
         "--logit-bias",
         [&g](const std::vector<std::string>& entries) {
           for (const std::string& entry : entries) g.sampling.logit_bias.push_back(parse_logit_bias(entry));
           if (const int32_t twice = g.sampling.sort_logit_bias(); twice >= 0)
             throw CLI::ValidationError("--logit-bias", "token " + std::to_string(twice) + " given twice");
         },
         "TOKEN_ID=BIAS added to that token's logit, bias in [-100, 100] (repeatable)")
      ->type_name("ID=BIAS");
  cmd->add_option("--stop", g.stop, "Stop string (repeatable)");
  cmd->add_flag("--include-stop-str-in-output", g.include_stop_str_in_output,
                "Keep the stop string that ended the output in its text");
  cmd->add_option("--stop-token-id", g.stop_token_ids,
                  "Token id that ends the output as end-of-sequence does (repeatable)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--min-tokens", g.min_tokens,
                  "End-of-sequence and stop tokens cannot end the output before this many tokens")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--ignore-eos", g.ignore_eos, "Continue past the end-of-sequence token");
  add_output_format_options(cmd, g);
}

// The structured-output constraints, one at most: each compiles at parse time, so a bad
// pattern or schema is a usage error naming the option.
void add_output_format_options(CLI::App* cmd, GenerationOptions& g) {
  const auto compiled = [](const char* option, auto compile) {
    try {
      return compile();
    } catch (const Error& e) {
      // "regex: ..." / "grammar: ..." / "json_schema: ...": the option says which
      std::string_view message = e.message();
      if (const size_t colon = message.find(": "); colon != std::string_view::npos && colon < 12)
        message.remove_prefix(colon + 2);
      throw CLI::ValidationError(option, std::string(message));
    }
  };
  CLI::Option* regex = cmd->add_option_function<std::string>(
      "--regex",
      [&g, compiled](const std::string& pattern) {
        g.regex = compiled("--regex", [&] { return CompiledRegex::compile(pattern); });
        g.response_format = ResponseFormat::kRegex;
      },
      "The output must match this regular expression whole (Python's syntax; constrained decoding)");
  CLI::Option* choice = cmd->add_option_function<std::vector<std::string>>(
      "--choice",
      [&g, compiled](const std::vector<std::string>& choices) {
        g.regex = compiled("--choice", [&] { return CompiledRegex::compile(choice_regex(choices)); });
        g.response_format = ResponseFormat::kRegex;
      },
      "The output is one of these strings (repeatable; constrained decoding)");
  CLI::Option* grammar = cmd->add_option_function<std::string>(
      "--grammar",
      [&g, compiled](const std::string& path) {
        std::ifstream in(path);
        if (!in.good()) throw CLI::ValidationError("--grammar", "cannot read " + path);
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        g.gbnf_grammar = compiled("--grammar", [&] { return CompiledGrammar::compile(text); });
        g.response_format = ResponseFormat::kGrammar;
      },
      "The output is a string of the context-free grammar in this file (GBNF, rule 'root'; constrained decoding)");
  CLI::Option* schema = cmd->add_option_function<std::string>(
      "--json-schema",
      [&g, compiled](const std::string& path) {
        std::ifstream in(path);
        if (!in.good()) throw CLI::ValidationError("--json-schema", "cannot read " + path);
        const auto text = nlohmann::ordered_json::parse(in, nullptr, /*allow_exceptions=*/false);
        if (text.is_discarded()) throw CLI::ValidationError("--json-schema", path + " is not JSON");
        g.json_schema = compiled("--json-schema", [&] { return compile_json_schema(text); });
        g.response_format = ResponseFormat::kJsonSchema;
      },
      "The output is a JSON value valid under the JSON Schema in this file (constrained decoding)");
  CLI::Option* object = cmd->add_flag_function(
      "--json-object", [&g](int64_t) { g.response_format = ResponseFormat::kJsonObject; },
      "The output is a JSON object (constrained decoding)");
  const std::vector<CLI::Option*> formats = {regex, choice, grammar, schema, object};
  for (CLI::Option* a : formats)
    for (CLI::Option* b : formats)
      if (a != b) a->excludes(b);
}

void add_speculator_options(CLI::App* cmd, SpeculatorOptions& s) {
  cmd->add_option("--speculator", s.speculator,
                  "\"ngram\", a draft model directory, a DSpark/DFlash drafter directory (speculators layout), or an EAGLE-3 drafter (speculators or original layout)");
  cmd->add_option("--num-spec-tokens", s.num_speculative_tokens,
                  "Draft tokens per verification round (K; 0 = 5, or a drafter's own block)")
      ->capture_default_str();
  cmd->add_option("--draft-p-min", s.draft_p_min, "Draft model: stop drafting below this probability")
      ->capture_default_str();
  cmd->add_option("--draft-context-window", s.draft_context_window,
                  "DSpark/DFlash/EAGLE-3 drafter: context positions a draft attends to (0 = the whole context)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--draft-pending-positions", s.draft_pending_positions,
                  "DSpark/DFlash/EAGLE-3 drafter: committed positions per request whose context projection waits "
                  "for its next draft (0 = at once, -1 = about 64 MiB over all requests)")
      ->check(CLI::Range(int64_t{-1}, std::numeric_limits<int64_t>::max()))
      ->capture_default_str();
  cmd->add_option("--repeat-lookup-min-match", s.repeat_lookup_min_match,
                  "DSpark/DFlash drafter: a greedy request whose last tokens occurred earlier, matching at least "
                  "this many (up to 16), drafts what followed them, read as a loop, instead of running the drafter "
                  "(0 = never)")
      ->check(CLI::Range(0, static_cast<int>(kRepeatMaxTail)))
      ->capture_default_str();
  cmd->add_flag_function(
      "--no-greedy-draft-vocab", [&s](int64_t) { s.greedy_draft_vocab = false; },
      "DSpark/DFlash drafter with a greedy draft vocabulary: draft greedy requests from the whole vocabulary too");
  cmd->add_option_function<std::string>(
         "--draft-quantization", [&s](const std::string& q) { if (q != "auto") s.quantization = parse_quantization(q); },
         "Draft model / DSpark / DFlash / EAGLE-3 drafter matmul weights: auto (the drafter config's "
         "\"quantization\", else as the target's), none, int8 or int4")
      ->check(CLI::IsMember({"auto", "none", "int8", "int4"}))
      ->default_str("auto");
  cmd->add_option("--ngram-min", s.ngram_min, "N-gram: shortest tail matched")->capture_default_str();
  cmd->add_option("--ngram-max", s.ngram_max, "N-gram: longest tail tried first")->capture_default_str();
}

std::string auto_compute_dtype(const std::filesystem::path& model_dir) {
  std::ifstream in(model_dir / "config.json");
  if (!in.good()) return "bf16";  // the loader reports the missing file
  const nlohmann::json config = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object()) return "bf16";
  // Hugging Face's default when a checkpoint names no dtype is float32.
  std::string dtype = "float32";
  for (const char* key : {"torch_dtype", "dtype"}) {
    if (auto it = config.find(key); it != config.end() && it->is_string()) {
      dtype = it->get<std::string>();
      break;
    }
  }
  // float16 has no kernels here: bf16 keeps its range (as vLLM does on CPU).
  return dtype == "float32" ? "f32" : "bf16";
}

void apply_isa(const ModelArgs& a) {
  if (a.isa != "auto") set_active_isa(parse_isa(a.isa));
}

namespace {

// One line on stderr, once per process: which kernels the target runs on.
void print_kernels(const Transformer& model) {
  static bool printed = false;
  if (printed) return;
  printed = true;
  const WeightQuantization q = stored_quantization(model.config()).value_or(model.options().quantization);
  fmt::print(stderr, "kernels: isa {} (cpu best {}), matmul {} ({} weights)\n", isa_name(active_isa()),
             isa_name(best_isa()), model.matmul_kernel(),
             q != WeightQuantization::kNone ? quantization_name(q) : dtype_name(model.options().compute));
  // Weights in 4 KB pages cost a TLB miss per 4 KB a step reads (core/huge_pages.h).
  const HugePageReport pages = huge_page_report();
  const bool mostly_small = pages.huge_bytes * 2 < pages.resident_bytes;
  fmt::print(stderr, "memory: {:.1f} of {:.1f} MB of weights in 2 MB pages (transparent huge pages: {}){}\n",
             static_cast<double>(pages.huge_bytes) / 1e6, static_cast<double>(pages.resident_bytes) / 1e6,
             pages.mode.empty() ? "unknown" : pages.mode,
             mostly_small ? "; decoding is faster with `madvise` in /sys/kernel/mm/transparent_hugepage/enabled" : "");
}

}  // namespace

EngineOptions engine_options(const ModelArgs& a, int64_t max_running) {
  EngineOptions e;
  e.max_running = max_running;
  e.max_batch_tokens = a.max_batch_tokens;
  e.prefill_chunk = a.max_batch_tokens;
  e.kv_dtype = parse_dtype(a.kv_dtype);
  e.enable_prefix_caching = !a.no_prefix_caching;
  e.adapt_confidence = !a.no_confidence_adaptation;
  return e;
}

void warm_up(Engine& engine, const std::vector<int32_t>& prompt) {
  GenerationOptions g;
  g.max_tokens = 16;
  g.sampling.temperature = 0;
  g.ignore_eos = true;
  generate_one(engine, prompt, g);
}

Assembly assemble(const ModelArgs& a, const SpeculatorOptions& speculator, int64_t max_running) {
  if (a.threads > 0) set_num_threads(a.threads);
  apply_isa(a);
  AssemblyOptions o;
  o.model_dir = a.model_dir;
  o.target.compute = parse_dtype(a.dtype);
  o.target.quantization = parse_quantization(a.quantization);
  o.target.max_batch_tokens = a.max_batch_tokens;
  o.target.max_model_len = a.max_model_len;
  o.speculator = speculator;
  o.engine = engine_options(a, max_running);
  o.schedule = a.spec_schedule == "adaptive" ? SpecSchedule::kAdaptive : SpecSchedule::kFixed;
  o.reprofile = a.reprofile;
  Assembly assembly = dspark::assemble(o);
  print_kernels(*assembly.target);
  if (!speculator.speculator.empty() && speculator.speculator != "ngram") {
    const WeightQuantization q = drafter_quantization(speculator, *assembly.target);
    fmt::print(stderr, "drafter: {} ({} weights)\n", speculator.speculator,
               q != WeightQuantization::kNone ? std::string(quantization_name(q)) : a.dtype);
  }
  if (assembly.profile) {
    const auto& sps = assembly.engine.step_cost->values();
    std::fprintf(stderr, "[dspark] step-cost profile %s (%.1f s): SPS(1) %.0f, SPS(9) %.0f, SPS(%lld) %.0f steps/s\n",
                 step_profile_source_name(assembly.profile->source), assembly.profile->seconds, sps[0],
                 sps[std::min<size_t>(8, sps.size() - 1)], static_cast<long long>(sps.size()), sps.back());
  }
  return assembly;
}

std::string format_position_rates(const SpecDecodeMetrics& m) {
  std::string out;
  for (int32_t i = 0; i < m.max_positions(); ++i) {
    if (m.drafted_per_position[i] == 0) break;
    out += fmt::format("{}{:.2f}", i ? " " : "", m.position_acceptance_rate(i));
  }
  return out.empty() ? "-" : out;
}

}  // namespace dspark::cli
