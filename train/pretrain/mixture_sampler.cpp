#include "train/pretrain/mixture_sampler.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "core/check.h"
#include "core/rng.h"

namespace dspark::train {

namespace {

uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::vector<MixtureWeight> parse_mixture(std::string_view spec) {
  std::vector<MixtureWeight> out;
  double total = 0;
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    std::string_view entry = trim(spec.substr(0, comma));
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    if (entry.empty()) continue;
    const size_t eq = entry.find('=');
    DSPARK_CHECK(eq != std::string_view::npos, "--mix: entry '{}' is not name=weight", entry);
    MixtureWeight w;
    w.source = std::string(trim(entry.substr(0, eq)));
    const std::string value(trim(entry.substr(eq + 1)));
    char* end = nullptr;
    w.weight = std::strtod(value.c_str(), &end);
    DSPARK_CHECK(!w.source.empty() && !value.empty() && end == value.c_str() + value.size() && w.weight >= 0,
                 "--mix: entry '{}' needs a name and a non-negative number", entry);
    for (const auto& other : out) DSPARK_CHECK(other.source != w.source, "--mix: source '{}' given twice", w.source);
    total += w.weight;
    out.push_back(std::move(w));
  }
  DSPARK_CHECK(!out.empty() && total > 0, "--mix: needs at least one source with a positive weight");
  return out;
}

std::string format_mixture(const std::vector<MixtureWeight>& mixture) {
  std::string s;
  for (const auto& w : mixture) s += fmt::format("{}{}={}", s.empty() ? "" : ",", w.source, w.weight);
  return s;
}

MixtureSampler::MixtureSampler(const TokenShards& corpus, const std::vector<MixtureWeight>& mixture,
                               int64_t window_tokens, uint64_t seed)
    : corpus_(corpus), window_tokens_(window_tokens), seed_(seed) {
  DSPARK_CHECK(window_tokens >= 2, "window of {} tokens is too short", window_tokens);
  double total = 0;
  for (const auto& w : mixture) {
    const size_t index = corpus.index_of(w.source);
    if (w.weight <= 0) continue;
    const auto& src = corpus.sources()[index];
    DSPARK_CHECK(src.train_tokens >= window_tokens, "source '{}' has {} train tokens, fewer than one window of {}",
                 src.name, src.train_tokens, window_tokens);
    sources_.push_back(static_cast<int32_t>(index));
    total += w.weight;
    cumulative_.push_back(total);
  }
  DSPARK_CHECK(total > 0, "mixture has no source with a positive weight");
  for (auto& c : cumulative_) c /= total;
  cumulative_.back() = 1.0;
}

Window MixtureSampler::window(int64_t step, int64_t index) const {
  Rng rng(mix64(mix64(seed_ ^ mix64(static_cast<uint64_t>(step))) + static_cast<uint64_t>(index)));
  const double u = rng.uniform();
  size_t k = 0;
  while (k + 1 < cumulative_.size() && u >= cumulative_[k]) ++k;
  Window w;
  w.source = sources_[k];
  const uint64_t range = corpus_.train(w.source).size() - window_tokens_ + 1;
  w.start = static_cast<int64_t>(rng.next_u64() % range);
  return w;
}

void MixtureSampler::fill(int64_t step, int64_t index0, int64_t count, std::span<int32_t> out) const {
  DSPARK_CHECK(static_cast<int64_t>(out.size()) == count * window_tokens_, "fill: output holds {} tokens, need {}",
               out.size(), count * window_tokens_);
  for (int64_t i = 0; i < count; ++i) {
    const Window w = window(step, index0 + i);
    const auto& tokens = corpus_.train(w.source);
    std::memcpy(out.data() + i * window_tokens_, tokens.data() + w.start, window_tokens_ * sizeof(int32_t));
  }
}

std::vector<Window> MixtureSampler::val_windows(size_t source, int64_t count) const {
  std::vector<Window> out;
  DSPARK_CHECK(source < corpus_.num_sources(), "val_windows: no source {}", source);
  const int64_t n = static_cast<int64_t>(corpus_.val(source).size());
  if (n < window_tokens_ || count <= 0) return out;
  // Non-overlapping when the split is long enough; evenly spaced otherwise.
  const int64_t fit = n / window_tokens_;
  const int64_t m = std::min(count, fit);
  const int64_t last = n - window_tokens_;
  for (int64_t i = 0; i < m; ++i)
    out.push_back({static_cast<int32_t>(source), m == 1 ? 0 : i * last / (m - 1)});
  return out;
}

void MixtureSampler::fill_val(std::span<const Window> windows, std::span<int32_t> out) const {
  DSPARK_CHECK(out.size() == windows.size() * static_cast<size_t>(window_tokens_), "fill_val: wrong output size");
  for (size_t i = 0; i < windows.size(); ++i) {
    const auto& tokens = corpus_.val(windows[i].source);
    std::memcpy(out.data() + i * window_tokens_, tokens.data() + windows[i].start, window_tokens_ * sizeof(int32_t));
  }
}

}  // namespace dspark::train
