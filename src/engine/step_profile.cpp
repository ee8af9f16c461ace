#include "engine/step_profile.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/clock.h"
#include "core/threads.h"
#include "model/block_allocator.h"
#include "model/kv_pool.h"

namespace dspark {
namespace {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 1);
  }
  return "unknown-cpu";
}

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

namespace {

// Times forwards of B tokens spread over ceil(B / tokens_per_sequence) sequences with
// context_length cached positions each, for B up to max_tokens.
class StepTimer {
 public:
  StepTimer(Transformer& model, const StepProfileOptions& o, int64_t max_tokens)
      : model_(model), repeats_(std::max(1, o.repeats)), per_seq_(std::max<int64_t>(1, o.tokens_per_sequence)) {
    DSPARK_CHECK(max_tokens >= 1 && max_tokens <= model.options().max_batch_tokens,
                 "profile range 1..{} must fit the model's max_batch_tokens {}", max_tokens,
                 model.options().max_batch_tokens);
    const int64_t max_seqs = (max_tokens + per_seq_ - 1) / per_seq_;
    DSPARK_CHECK(max_seqs <= model.options().max_sequences,
                 "profiling {} tokens needs {} sequences; the model allows {}", max_tokens, max_seqs,
                 model.options().max_sequences);
    context_ = std::min<int64_t>(o.context_length, model.max_model_len() - per_seq_);
    DSPARK_CHECK(context_ >= 1, "the model's context is too short to profile");
    const int64_t blocks_per_seq = (context_ + per_seq_ + kBlock - 1) / kBlock;
    kv_ = std::make_unique<KvPool>(model.config(), KvPoolOptions{max_seqs * blocks_per_seq, kBlock, o.kv_dtype});
    allocator_ = std::make_unique<BlockAllocator>(kv_->num_blocks());
    tables_.resize(max_seqs);
    // Fill every sequence's context once (its KV content does not affect the timing).
    for (auto& t : tables_) {
      DSPARK_CHECK(t.reserve(context_ + per_seq_, kBlock, *allocator_), "profile KV pool too small");
      for (int64_t done = 0; done < context_;) {
        const int64_t n = std::min(context_ - done, model.options().max_batch_tokens);
        std::vector<int32_t> ids(n, 1);
        const SequenceSlice slice{static_cast<int32_t>(n), static_cast<int32_t>(done), t.data()};
        model.forward(ForwardBatch{ids, {&slice, 1}, {}}, *kv_);
        done += n;
      }
    }
    seconds(1);  // warm-up
  }

  // The fastest of `repeats` forwards of num_tokens tokens (noise only adds time).
  double seconds(int64_t num_tokens) {
    std::vector<int32_t> ids(num_tokens, 1), rows(num_tokens);
    std::iota(rows.begin(), rows.end(), 0);
    std::vector<SequenceSlice> slices;
    for (int64_t left = num_tokens, s = 0; left > 0; ++s) {
      const int64_t n = std::min(left, per_seq_);
      slices.push_back({static_cast<int32_t>(n), static_cast<int32_t>(context_), tables_[s].data()});
      left -= n;
    }
    double best = 1e30;
    for (int32_t rep = 0; rep < repeats_; ++rep) {
      const double t0 = now_seconds();
      model_.forward(ForwardBatch{ids, slices, rows}, *kv_);
      best = std::min(best, now_seconds() - t0);
    }
    return best;
  }

 private:
  static constexpr int64_t kBlock = 16;
  Transformer& model_;
  int32_t repeats_;
  int64_t per_seq_;
  int64_t context_ = 0;
  std::unique_ptr<KvPool> kv_;
  std::unique_ptr<BlockAllocator> allocator_;
  std::vector<BlockTable> tables_;
};

// A cached profile measured while the machine was busy (a build, another benchmark) would
// make every later run plan with steps slower than they are. Two points are timed again
// (one token, and one verification step); a cache that is much slower than the machine is
// now is stale. One that is faster is kept: a busy machine now is no reason to bake the
// load into the cache.
bool is_stale(const StepCostTable& cached, Transformer& model, const StepProfileOptions& o) {
  const int64_t verify = std::min<int64_t>({cached.max_tokens(), o.max_tokens, std::max<int64_t>(1, o.tokens_per_sequence)});
  StepTimer timer(model, o, verify);
  for (const int64_t b : {int64_t{1}, verify}) {
    if (1.0 / cached.sps(b) > o.stale_ratio * timer.seconds(b)) return true;
  }
  return false;
}

}  // namespace

StepCostTable measure_step_cost(Transformer& model, const StepProfileOptions& o) {
  StepTimer timer(model, o, o.max_tokens);
  std::vector<int64_t> points;
  for (int64_t b = 1; b <= o.max_tokens; b += b < 32 ? 1 : 8) points.push_back(b);
  if (points.back() != o.max_tokens) points.push_back(o.max_tokens);
  std::vector<double> seconds(points.size());
  for (size_t i = 0; i < points.size(); ++i) seconds[i] = timer.seconds(points[i]);

  std::vector<double> sps(o.max_tokens);
  size_t k = 0;
  for (int64_t b = 1; b <= o.max_tokens; ++b) {
    while (k + 1 < points.size() && points[k + 1] <= b) ++k;
    double t = seconds[k];
    if (points[k] != b && k + 1 < points.size()) {
      const double w = static_cast<double>(b - points[k]) / static_cast<double>(points[k + 1] - points[k]);
      t = seconds[k] * (1 - w) + seconds[k + 1] * w;
    }
    sps[b - 1] = 1.0 / t;
  }
  return StepCostTable(std::move(sps));
}

std::string step_profile_key(const std::filesystem::path& model_dir, const Transformer& model,
                             const StepProfileOptions& o) {
  // v2: tables smoothed by the faster measurement (older entries kept slow outliers).
  // v3: the matmul kernel and weight quantization (ISA dispatch) are part of the key.
  // v4: the kernels prefetch their weights; v3 tables are up to 2x too slow, which the
  // stale check (1.5x) would not always catch.
  // v5: AVX2 attention and the 5-row fma256 tile: v4 tables of AVX2 CPUs put a 9-token step
  // about 1.2x too slow, below the stale check.
  // v6: 6-row vnni512 int8 tiles: v5 int8 tables put 16-64 token steps up to 1.8x too slow.
  // v7: the kernels' own thread team: v6 tables put a one-token step 1.2-1.6x too slow (a
  // 9-token one 1.1-1.4x), under the stale check, which skews every K the scheduler picks.
  // v8: attention's row pairs and vector bookkeeping: v7 tables put multi-token steps a few
  // percent too slow (their attention 1.3-1.5x slower), under the stale check.
  // v9: the KV cache's dtype is part of the key (it was always measured with f32 KV).
  // v10: weight prefetches spread over each chunk, half-group fma512 tiles: v9 tables put
  // multi-token fma512 steps 1.1-1.3x too slow, under the stale check.
  // v11: packed weights and KV pools in 2 MB pages: v10 tables put steps 4-17% too slow,
  // one-token steps most, under the stale check.
  // v12: transposed K blocks: v11 tables put 9-token steps 5-10% too slow, under the stale check.
  // v13: weight prefetches at a fixed count per k-pair: v12 tables put fma512 9-token steps about
  // 3% too slow, under the stale check.
  // v14: AVX2 4-bit products summed in int16: v13 tables of AVX2 CPUs with int4 weights put a
  // 9-token step about 1.5x too slow, a one-token step 1.2x, at the stale check's edge.
  std::ostringstream key;
  key << "v14|" << model.config().to_json().dump() << '|' << dtype_name(model.options().compute) << '|'
      << quantization_name(model.options().quantization) << '|' << model.matmul_kernel() << '|' << num_threads() << '|'
      << cpu_model_name() << '|' << o.max_tokens << '|' << o.context_length << '|' << o.tokens_per_sequence << '|'
      << dtype_name(o.kv_dtype);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(model_dir, ec)) {
    if (entry.path().extension() == ".safetensors") {
      key << '|' << entry.path().filename().string() << ':' << entry.file_size(ec) << ':'
          << entry.last_write_time(ec).time_since_epoch().count();
    }
  }
  std::ostringstream hex;
  hex << std::hex << fnv1a(key.str());
  return hex.str();
}

StepCostTable load_or_measure_step_cost(const std::filesystem::path& model_dir, Transformer& model,
                                        const StepProfileOptions& options, const std::filesystem::path& cache_dir,
                                        StepProfileSource* source) {
  const auto path = cache_dir / "step_profile" / (step_profile_key(model_dir, model, options) + ".json");
  StepProfileSource how = StepProfileSource::kMeasured;
  if (std::filesystem::exists(path)) {
    std::optional<StepCostTable> cached;
    try {
      const auto json = nlohmann::json::parse(std::ifstream(path));
      cached.emplace(json.at("steps_per_second").get<std::vector<double>>());
    } catch (const std::exception&) {
      // A damaged cache entry is measured again and overwritten.
    }
    if (cached && cached->max_tokens() == options.max_tokens) {
      if (!is_stale(*cached, model, options)) {
        if (source) *source = StepProfileSource::kCached;
        return std::move(*cached);
      }
      how = StepProfileSource::kMeasuredStale;
    }
  }
  StepCostTable table = measure_step_cost(model, options);
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  const auto tmp = path.string() + ".tmp";
  std::ofstream(tmp) << nlohmann::json{{"model_dir", model_dir.string()},
                                      {"threads", num_threads()},
                                      {"max_tokens", options.max_tokens},
                                      {"steps_per_second", table.values()}}
                            .dump();
  std::filesystem::rename(tmp, path, ec);
  if (source) *source = how;
  return table;
}

const char* step_profile_source_name(StepProfileSource source) {
  switch (source) {
    case StepProfileSource::kCached: return "cached";
    case StepProfileSource::kMeasured: return "measured";
    case StepProfileSource::kMeasuredStale: return "measured again (the cached one was stale)";
  }
  return "?";
}

std::filesystem::path default_cache_dir() {
  if (const char* dir = std::getenv("DSPARK_CACHE_DIR")) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME")) return std::filesystem::path(xdg) / "dspark";
  if (const char* home = std::getenv("HOME")) return std::filesystem::path(home) / ".cache" / "dspark";
  return std::filesystem::temp_directory_path() / "dspark-cache";
}

}  // namespace dspark
