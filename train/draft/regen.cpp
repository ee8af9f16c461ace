// Regeneration of drafter training data on the engine: prompt list, resume, batched
// generation, progress.
#include "train/draft/regen.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <unordered_set>

#include <CLI/CLI.hpp>
#include <fmt/chrono.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/clock.h"
#include "core/rng.h"
#include "core/threads.h"
#include "data/corpus_sources.h"
#include "data/token_shards.h"
#include "engine/engine.h"
#include "tokenizer/tokenizer.h"
#include "model/transformer.h"
#include "train/draft/regen_records.h"

#ifndef DSPARK_REGEN_DEFAULT_SHARED_DIR
#define DSPARK_REGEN_DEFAULT_SHARED_DIR "../shared"
#endif

namespace dspark::train {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

uint64_t hash_string(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

std::vector<json> read_jsonl(const fs::path& path) {
  std::ifstream in(path);
  DSPARK_CHECK(in, "cannot read {}", path.string());
  std::vector<json> out;
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    try {
      out.push_back(json::parse(line));
    } catch (const json::exception& e) {
      DSPARK_FAIL("{}:{}: invalid JSON: {}", path.string(), n, e.what());
    }
  }
  return out;
}

// Keeps the first `count` (all when count < 0) of a seeded permutation of 0..n-1, sorted.
std::vector<int64_t> choose(int64_t n, int64_t count, uint64_t seed) {
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[i] = i;
  if (count < 0 || count >= n) return idx;
  Rng rng(seed);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t j = i + static_cast<int64_t>(rng.uniform() * static_cast<double>(n - i));
    std::swap(idx[i], idx[j]);
  }
  idx.resize(static_cast<size_t>(count));
  std::sort(idx.begin(), idx.end());
  return idx;
}

void add_prefixes(const TokenShards& shards, const std::string& source, int64_t count, int64_t prefix_tokens,
                  uint64_t seed, const Tokenizer& tokenizer, std::vector<RegenPrompt>& out) {
  if (count == 0 || shards.was_skipped(source)) return;  // a broken source: the caller logged why
  const auto& tokens = shards.train(shards.index_of(source));
  const int32_t eos = shards.eos_id();
  // Document spans [start, end) of the train shard (documents end with EOS).
  std::vector<std::pair<int64_t, int64_t>> docs;
  int64_t start = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(tokens.size()); ++i) {
    if (tokens[i] != eos) continue;
    if (i - start >= prefix_tokens) docs.emplace_back(start, i);
    start = i + 1;
  }
  DSPARK_CHECK(!docs.empty(), "shards: source '{}' has no document of {} tokens or more", source, prefix_tokens);
  int64_t total = 0;
  for (const auto& [s, e] : docs) total += e - s - prefix_tokens + 1;  // possible prefix starts
  Rng rng(seed ^ hash_string(source));
  std::set<int64_t> used;
  const int64_t want = std::min(count, total);
  for (int64_t attempts = 0; static_cast<int64_t>(used.size()) < want && attempts < 20 * want + 100; ++attempts) {
    // A uniform prefix start over all documents.
    int64_t k = static_cast<int64_t>(rng.uniform() * static_cast<double>(total));
    int64_t begin = -1;
    for (const auto& [s, e] : docs) {
      const int64_t n = e - s - prefix_tokens + 1;
      if (k < n) {
        begin = s + k;
        break;
      }
      k -= n;
    }
    if (begin < 0 || !used.insert(begin).second) continue;
    RegenPrompt p;
    p.id = fmt::format("{}:{}", source, begin);
    p.source = source;
    p.ids.assign(tokens.begin() + begin, tokens.begin() + begin + prefix_tokens);
    p.text = tokenizer.decode(p.ids);
    out.push_back(std::move(p));
  }
}

fs::path resolve_tokenizer_dir(const RegenOptions& o) {
  if (!o.tokenizer.empty()) return o.tokenizer;
  if (fs::exists(o.model / "tokenizer.json")) return o.model;
  const fs::path state = o.model / "state.json";
  if (fs::exists(state)) {
    std::ifstream in(state);
    const json j = json::parse(in, nullptr, false);
    if (j.is_object() && j.contains("tokenizer_dir")) return j["tokenizer_dir"].get<std::string>();
  }
  DSPARK_FAIL("regen: {} has no tokenizer.json and no checkpoint state naming one; pass --tokenizer",
              o.model.string());
}

std::string finish_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kEos: return "eos";
    case FinishReason::kLength: return "length";
    case FinishReason::kStop: return "stop";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
  }
  return "error";
}

// Drops a partial last line left by a killed writer, so appended records start on a line.
void truncate_partial_line(const fs::path& path) {
  if (!fs::exists(path)) return;
  std::string data;
  {
    std::ifstream in(path, std::ios::binary);
    data.assign(std::istreambuf_iterator<char>(in), {});
  }
  if (data.empty() || data.back() == '\n') return;
  const size_t keep = data.rfind('\n') == std::string::npos ? 0 : data.rfind('\n') + 1;
  fs::resize_file(path, keep);
}

}  // namespace

void RegenOptions::validate() const {
  DSPARK_CHECK(!model.empty(), "regen: --model is required");
  DSPARK_CHECK(!out.empty(), "regen: --out is required");
  DSPARK_CHECK(prefix_tokens >= 1, "regen: --prefix-tokens must be >= 1, got {}", prefix_tokens);
  DSPARK_CHECK(max_tokens >= 1, "regen: --max-tokens must be >= 1, got {}", max_tokens);
  DSPARK_CHECK(max_running >= 1, "regen: --max-running must be >= 1, got {}", max_running);
  DSPARK_CHECK(limit >= 0, "regen: --limit must be >= 0, got {}", limit);
  DSPARK_CHECK(temperature >= 0, "regen: --temperature must be >= 0, got {}", temperature);
  DSPARK_CHECK((code == 0 && prose == 0) || !shards.empty(),
               "regen: code/prose prefixes need --shards (or --code 0 --prose 0)");
}

std::vector<RegenPrompt> regen_prompts(const RegenOptions& o, const Tokenizer& tokenizer,
                                       std::vector<std::string>& notes) {
  std::vector<RegenPrompt> prompts;
  const fs::path data = o.shared_dir / "data";
  if (o.gsm8k != 0) {
    const auto rows = read_jsonl(data / "corpus" / "gsm8k_train.jsonl");
    for (int64_t i : choose(static_cast<int64_t>(rows.size()), o.gsm8k, o.seed ^ hash_string("gsm8k"))) {
      RegenPrompt p;
      p.id = fmt::format("gsm8k:{}", i);
      p.source = "gsm8k";
      p.text = "Question: " + rows[i].at("question").get<std::string>() + "\nAnswer:";
      prompts.push_back(std::move(p));
    }
  }
  if (o.mbpp != 0) {
    std::vector<const json*> train;
    const auto rows = read_jsonl(data / "eval" / "mbpp.jsonl");
    for (const json& row : rows)
      if (is_mbpp_training_task(row.at("task_id").get<int64_t>())) train.push_back(&row);
    for (int64_t i : choose(static_cast<int64_t>(train.size()), o.mbpp, o.seed ^ hash_string("mbpp"))) {
      const json& row = *train[i];
      const int64_t task = row.at("task_id").get<int64_t>();
      // The evaluation splits (tasks 1..600) must never become training data.
      DSPARK_CHECK(is_mbpp_training_task(task), "regen: MBPP task {} is not in the training split 601..974", task);
      RegenPrompt p;
      p.id = fmt::format("mbpp:{}", task);
      p.source = "mbpp";
      p.text = "# " + row.at("text").get<std::string>() + "\n";
      prompts.push_back(std::move(p));
    }
  }
  for (RegenPrompt& p : prompts) p.ids = tokenizer.encode(p.text);
  if (o.code != 0 || o.prose != 0) {
    // A broken shard costs its source's prefixes, not the run: regen has other prompts.
    const TokenShards shards(o.shards, ShardErrors::kSkipSource);
    for (const SkippedShardSource& skip : shards.skipped())
      notes.push_back(fmt::format("regen: no {} prefixes, its shard is broken: {}", skip.name, skip.reason));
    DSPARK_CHECK(shards.vocab_size() <= tokenizer.vocab_size(),
                 "regen: shards {} have vocabulary {} but the tokenizer has {}", o.shards.string(),
                 shards.vocab_size(), tokenizer.vocab_size());
    add_prefixes(shards, "code", o.code < 0 ? 1000000 : o.code, o.prefix_tokens, o.seed, tokenizer, prompts);
    add_prefixes(shards, "prose", o.prose < 0 ? 1000000 : o.prose, o.prefix_tokens, o.seed, tokenizer, prompts);
  }
  // One seeded shuffle of everything, so a limited run is a mix of sources.
  Rng rng(o.seed ^ 0x5eedull);
  for (int64_t i = static_cast<int64_t>(prompts.size()) - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(rng.uniform() * static_cast<double>(i + 1));
    std::swap(prompts[i], prompts[j]);
  }
  if (o.limit > 0 && static_cast<int64_t>(prompts.size()) > o.limit) prompts.resize(static_cast<size_t>(o.limit));
  return prompts;
}

RegenResult run_regen(const RegenOptions& o) {
  o.validate();
  set_num_threads(o.threads);
  const double t0 = now_seconds();
  const Tokenizer tokenizer = Tokenizer::from_dir(resolve_tokenizer_dir(o));
  auto log = [&](const std::string& line) {
    if (!o.quiet) fmt::print("{}\n", line);
    std::fflush(stdout);
  };

  std::vector<std::string> notes;
  std::vector<RegenPrompt> prompts = regen_prompts(o, tokenizer, notes);
  for (const std::string& note : notes) log(note);
  RegenResult result;
  result.prompts = static_cast<int64_t>(prompts.size());

  if (!o.out.parent_path().empty()) fs::create_directories(o.out.parent_path());
  truncate_partial_line(o.out);
  std::unordered_set<std::string> done;
  for (const RegenRecord& r : read_regen_records(o.out)) done.insert(r.id);
  std::vector<const RegenPrompt*> todo;
  for (const RegenPrompt& p : prompts) {
    if (done.count(p.id)) ++result.skipped;
    else todo.push_back(&p);
  }
  log(fmt::format("regen: {} prompts, {} already in {}, {} to answer (max_tokens {}, {}, max_running {})",
                  prompts.size(), result.skipped, o.out.string(), todo.size(), o.max_tokens,
                  o.temperature > 0 ? fmt::format("temperature {}", o.temperature) : std::string("greedy"),
                  o.max_running));
  if (todo.empty()) return result;

  std::ofstream out(o.out, std::ios::app);
  DSPARK_CHECK(out, "regen: cannot open {} for writing", o.out.string());

  struct Pending {
    const RegenPrompt* prompt;
    std::vector<int32_t> tokens;
  };
  std::map<int64_t, Pending> pending;  // by engine request id

  TransformerOptions topts;
  topts.compute = parse_dtype(o.dtype);
  topts.max_batch_tokens = o.max_batch_tokens;
  topts.max_sequences = o.max_running;
  auto model = Transformer::load(o.model, topts);
  EngineOptions eopts;
  eopts.max_running = o.max_running;
  eopts.max_batch_tokens = o.max_batch_tokens;
  eopts.prefill_chunk = o.max_batch_tokens;
  Engine engine(*model, tokenizer, eopts);

  size_t next = 0;
  const int64_t window = 2 * o.max_running;  // queued + running: keeps the batch full
  const double gen_start = now_seconds();
  double last_log = gen_start;
  // Each step's outputs, to their pending prompt; a finished one is written out.
  auto on_output = [&pending, &result, &out, &tokenizer, &log, &o](const RequestOutput& r) {
    auto it = pending.find(r.request_id);
    if (it == pending.end()) return;
    auto& tokens = it->second.tokens;
    tokens.insert(tokens.end(), r.token_ids.begin(), r.token_ids.end());
    if (!r.finished) return;
    const RegenPrompt& p = *it->second.prompt;
    if (r.finish_reason == FinishReason::kError || r.finish_reason == FinishReason::kCancelled) {
      log(fmt::format("warning: prompt {} failed: {}", p.id, r.error));
      ++result.failed;
    } else {
      RegenRecord rec;
      rec.id = p.id;
      rec.source = p.source;
      rec.prompt = p.text;
      rec.prompt_ids = p.ids;
      rec.completion_ids = tokens;
      rec.completion = tokenizer.decode(tokens);
      rec.finish_reason = finish_name(r.finish_reason);
      rec.temperature = o.temperature;
      out << regen_record_to_json(rec) << '\n';
      out.flush();
      ++result.written;
      result.generated_tokens += static_cast<int64_t>(tokens.size());
    }
    pending.erase(it);
  };
  auto submit = [&]() {
    while (next < todo.size() && static_cast<int64_t>(pending.size()) < window) {
      const RegenPrompt* p = todo[next++];
      GenerationOptions g;
      g.max_tokens = std::min<int64_t>(o.max_tokens, model->max_model_len() - static_cast<int64_t>(p->ids.size()));
      if (g.max_tokens < 1) {
        log(fmt::format("warning: prompt {} ({} tokens) leaves no room in the context; skipped", p->id,
                        p->ids.size()));
        ++result.failed;
        continue;
      }
      g.sampling.temperature = o.temperature;
      g.sampling.top_p = o.top_p;
      g.sampling.top_k = o.top_k;
      g.sampling.seed = o.seed ^ hash_string(p->id);
      int64_t id = 0;
      try {
        id = engine.add_request(p->ids, g);
      } catch (const Error& e) {
        log(fmt::format("warning: prompt {} refused: {}", p->id, e.what()));
        ++result.failed;
        continue;
      }
      pending.emplace(id, Pending{p, {}});
    }
  };
  submit();
  std::vector<RequestOutput> outputs;
  while (engine.has_unfinished()) {
    engine.step(outputs);
    for (const RequestOutput& r : outputs) on_output(r);
    submit();
    const double now = now_seconds();
    if (now - last_log >= o.log_every_seconds || (!engine.has_unfinished() && next >= todo.size())) {
      const double elapsed = now - gen_start;
      const int64_t finished = result.written + result.failed;
      const double tps = elapsed > 0 ? static_cast<double>(result.generated_tokens) / elapsed : 0.0;
      const double per_prompt = finished > 0 ? elapsed / static_cast<double>(finished) : 0.0;
      const double eta = per_prompt * static_cast<double>(static_cast<int64_t>(todo.size()) - finished);
      log(fmt::format("regen {}/{} answered ({} failed), {} tokens, {:.0f} tok/s, elapsed {:.0f}s, eta {:.0f}s",
                      result.written, todo.size(), result.failed, result.generated_tokens, tps, elapsed, eta));
      last_log = now;
    }
  }
  DSPARK_CHECK(out.good(), "regen: writing {} failed", o.out.string());
  result.seconds = now_seconds() - t0;
  log(fmt::format("regen done: {} answered, {} skipped, {} failed, {} tokens in {:.1f}s", result.written,
                  result.skipped, result.failed, result.generated_tokens, result.seconds));
  return result;
}

void add_regen_command(CLI::App& app) {
  auto o = std::make_shared<RegenOptions>();
  o->shared_dir = fs::path(DSPARK_REGEN_DEFAULT_SHARED_DIR).lexically_normal();
  auto* cmd = app.add_subcommand("regen", "Answer the drafters' training prompts with the target (engine) -> JSONL");
  cmd->add_option("--model", o->model, "Target model: Hugging Face directory or pretraining checkpoint")->required();
  cmd->add_option("--tokenizer", o->tokenizer, "Tokenizer directory (default: the model's, or its run's)");
  cmd->add_option("--shared-dir", o->shared_dir, "Folder holding data/corpus and data/eval")->capture_default_str();
  cmd->add_option("--shards", o->shards, "Token shard directory for code/prose prefixes (train split)");
  cmd->add_option("--out", o->out, "Output JSONL (appended; existing ids are skipped)")->required();
  cmd->add_option("--gsm8k", o->gsm8k, "GSM8K train questions (-1 = all)")->capture_default_str();
  cmd->add_option("--mbpp", o->mbpp, "MBPP training tasks 601-974 (-1 = all)")->capture_default_str();
  cmd->add_option("--code", o->code, "Code prefixes from the shards")->capture_default_str();
  cmd->add_option("--prose", o->prose, "Prose prefixes from the shards")->capture_default_str();
  cmd->add_option("--prefix-tokens", o->prefix_tokens, "Tokens per code/prose prefix")->capture_default_str();
  cmd->add_option("--limit", o->limit, "At most this many prompts after shuffling (0 = all)")->capture_default_str();
  cmd->add_option("--max-tokens", o->max_tokens, "Answer length cap")->capture_default_str();
  cmd->add_option("--temperature", o->temperature, "Sampling temperature (0 = greedy)")->capture_default_str();
  cmd->add_option("--top-p", o->top_p, "Nucleus mass (1 = off)")->capture_default_str();
  cmd->add_option("--top-k", o->top_k, "Top-k (0 = off)")->capture_default_str();
  cmd->add_option("--seed", o->seed, "Prompt choice/order and sampling seed")->capture_default_str();
  cmd->add_option("--max-running", o->max_running, "Concurrent requests")->capture_default_str();
  cmd->add_option("--max-batch-tokens", o->max_batch_tokens, "Engine tokens per step")->capture_default_str();
  cmd->add_option("--dtype", o->dtype, "Engine compute dtype: bf16 or f32")->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads")->capture_default_str();
  cmd->add_option("--log-every", o->log_every_seconds, "Progress period in seconds")->capture_default_str();
  cmd->callback([o] { run_regen(*o); });
}

}  // namespace dspark::train
