#include "loadgen/bench_report.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

namespace dspark {
namespace {

double ms(double seconds) { return seconds * 1e3; }

// The value of a sample line "name{labels} value [timestamp]" if its metric name is
// exactly `name`.
std::optional<double> sample_value(std::string_view line, std::string_view name) {
  if (line.substr(0, name.size()) != name || line.size() == name.size()) return std::nullopt;
  std::string_view rest = line.substr(name.size());
  if (rest.front() == '{') {
    const size_t close = rest.find('}');
    if (close == std::string_view::npos) return std::nullopt;
    rest.remove_prefix(close + 1);
  }
  if (rest.empty() || rest.front() != ' ') return std::nullopt;
  const size_t start = rest.find_first_not_of(' ');
  if (start == std::string_view::npos) return std::nullopt;
  rest.remove_prefix(start);
  const std::string value(rest.substr(0, rest.find(' ')));
  try {
    size_t used = 0;
    const double v = std::stod(value, &used);
    if (used != value.size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The integer value of label `key` in a sample line's label set, if present.
std::optional<int64_t> label_value(std::string_view line, std::string_view key) {
  const size_t open = line.find('{');
  const size_t close = line.find('}');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
  const std::string needle = std::string(key) + "=\"";
  const std::string_view labels = line.substr(open + 1, close - open - 1);
  const size_t at = labels.find(needle);
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view value = labels.substr(at + needle.size());
  int64_t v = 0;
  size_t digits = 0;
  for (; digits < value.size() && value[digits] >= '0' && value[digits] <= '9'; ++digits) v = v * 10 + (value[digits] - '0');
  if (digits == 0 || digits >= value.size() || value[digits] != '"') return std::nullopt;
  return v;
}

}  // namespace

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = q / 100.0 * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (rank - static_cast<double>(lo));
}

LevelResult summarize(const std::string& mode, double level, const std::vector<RequestRecord>& records,
                      double duration_s) {
  LevelResult r;
  r.mode = mode;
  r.level = level;
  r.num_requests = static_cast<int64_t>(records.size());
  r.duration_s = duration_s;
  std::vector<double> ttft, tpot, itl;
  int64_t ok = 0;
  for (const RequestRecord& rec : records) {
    if (!rec.ok) {
      ++r.num_failed;
      if (r.first_error.empty()) r.first_error = rec.error;
      continue;
    }
    ++ok;
    r.output_tokens += rec.output_tokens;
    ttft.push_back(rec.ttft);
    if (rec.output_tokens > 1) tpot.push_back((rec.latency - rec.ttft) / static_cast<double>(rec.output_tokens - 1));
    itl.insert(itl.end(), rec.itl.begin(), rec.itl.end());
  }
  r.ttft_median_ms = ms(percentile(ttft, 50));
  r.ttft_p99_ms = ms(percentile(ttft, 99));
  r.tpot_median_ms = ms(percentile(tpot, 50));
  r.tpot_p99_ms = ms(percentile(tpot, 99));
  r.itl_median_ms = ms(percentile(itl, 50));
  if (duration_s > 0) {
    r.output_tokens_per_s = static_cast<double>(r.output_tokens) / duration_s;
    r.requests_per_s = static_cast<double>(ok) / duration_s;
  }
  return r;
}

std::optional<SpecCounters> parse_spec_counters(std::string_view text) {
  SpecCounters c;
  bool found = false;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto add = [&](double& field, std::initializer_list<std::string_view> names) {
      for (std::string_view name : names) {
        if (auto v = sample_value(line, name)) {
          field += *v;
          found = true;
          return;
        }
      }
    };
    add(c.drafts, {"dspark:spec_decode_num_drafts", "vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_drafts"});
    add(c.draft_tokens, {"dspark:spec_decode_num_draft_tokens", "vllm:spec_decode_num_draft_tokens_total",
                         "vllm:spec_decode_num_draft_tokens"});
    add(c.accepted_tokens, {"dspark:spec_decode_num_accepted_tokens", "vllm:spec_decode_num_accepted_tokens_total",
                            "vllm:spec_decode_num_accepted_tokens"});
    if (auto v = sample_value(line, "dspark:model_forward_seconds")) c.forward_seconds += *v;
    if (auto v = sample_value(line, "dspark:spec_decode_draft_seconds")) c.drafter_seconds += *v;
    if (auto v = sample_value(line, "dspark:spec_decode_context_seconds")) c.drafter_seconds += *v;
    if (auto rounds = sample_value(line, "dspark:spec_decode_verified_length")) {
      if (auto length = label_value(line, "length")) {
        c.verified_rounds += *rounds;
        c.verified_drafts += *rounds * static_cast<double>(*length);
      }
    }
  }
  if (!found) return std::nullopt;
  return c;
}

std::optional<double> mean_acceptance_length(const std::optional<SpecCounters>& before,
                                             const std::optional<SpecCounters>& after) {
  if (!before || !after) return std::nullopt;
  const double drafts = after->drafts - before->drafts;
  if (drafts <= 0) return std::nullopt;
  return 1.0 + (after->accepted_tokens - before->accepted_tokens) / drafts;
}

std::optional<double> mean_verified_length(const std::optional<SpecCounters>& before,
                                           const std::optional<SpecCounters>& after) {
  if (!before || !after) return std::nullopt;
  const double rounds = after->verified_rounds - before->verified_rounds;
  if (rounds <= 0) return std::nullopt;
  return (after->verified_drafts - before->verified_drafts) / rounds;
}

std::optional<double> drafter_time_share(const std::optional<SpecCounters>& before,
                                         const std::optional<SpecCounters>& after) {
  if (!before || !after) return std::nullopt;
  const double drafter = after->drafter_seconds - before->drafter_seconds;
  const double total = after->forward_seconds - before->forward_seconds + drafter;
  if (total <= 0) return std::nullopt;
  return drafter / total;
}

std::optional<PrefixCacheCounters> parse_prefix_cache_counters(std::string_view text) {
  PrefixCacheCounters c;
  bool has_queries = false, has_hits = false;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto add = [&](double& field, bool& found, std::initializer_list<std::string_view> names) {
      for (std::string_view name : names) {
        if (auto v = sample_value(line, name)) {
          field += *v;
          found = true;
          return;
        }
      }
    };
    add(c.queries, has_queries,
        {"dspark:prefix_cache_queries", "vllm:prefix_cache_queries_total", "vllm:prefix_cache_queries"});
    add(c.hits, has_hits, {"dspark:prefix_cache_hits", "vllm:prefix_cache_hits_total", "vllm:prefix_cache_hits"});
  }
  if (!has_queries || !has_hits) return std::nullopt;
  return c;
}

std::optional<double> prefix_cache_hit_rate(const std::optional<PrefixCacheCounters>& before,
                                            const std::optional<PrefixCacheCounters>& after) {
  if (!before || !after) return std::nullopt;
  const double queries = after->queries - before->queries;
  if (queries <= 0) return std::nullopt;
  return (after->hits - before->hits) / queries;
}

std::string format_table(const std::vector<LevelResult>& levels) {
  std::string out = fmt::format("{:<16} {:>5} {:>5} {:>9} {:>9} {:>9} {:>9} {:>8} {:>10} {:>7} {:>6} {:>6} {:>7}\n",
                                "level", "reqs", "fail", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "ITL p50",
                                "out tok/s", "req/s", "tau", "mean L", "draft%");
  for (const LevelResult& l : levels) {
    const std::string label = l.mode == "rate" ? fmt::format("rate {:g}/s", l.level)
                                               : fmt::format("concurrency {:g}", l.level);
    const std::string tau = l.tau ? fmt::format("{:.2f}", *l.tau) : "-";
    const std::string verified = l.mean_verified_length ? fmt::format("{:.2f}", *l.mean_verified_length) : "-";
    const std::string share = l.drafter_time_share ? fmt::format("{:.1f}", 100.0 * *l.drafter_time_share) : "-";
    out += fmt::format(
        "{:<16} {:>5} {:>5} {:>7.1f}ms {:>7.1f}ms {:>7.2f}ms {:>7.2f}ms {:>6.2f}ms {:>10.1f} {:>7.2f} {:>6} {:>6} {:>7}\n",
        label, l.num_requests, l.num_failed, l.ttft_median_ms, l.ttft_p99_ms, l.tpot_median_ms, l.tpot_p99_ms,
        l.itl_median_ms, l.output_tokens_per_s, l.requests_per_s, tau, verified, share);
  }
  return out;
}

nlohmann::json to_json(const LevelResult& l) {
  return {{"mode", l.mode},
          {"level", l.level},
          {"num_requests", l.num_requests},
          {"num_failed", l.num_failed},
          {"duration_s", l.duration_s},
          {"output_tokens", l.output_tokens},
          {"ttft_median_ms", l.ttft_median_ms},
          {"ttft_p99_ms", l.ttft_p99_ms},
          {"tpot_median_ms", l.tpot_median_ms},
          {"tpot_p99_ms", l.tpot_p99_ms},
          {"itl_median_ms", l.itl_median_ms},
          {"output_tokens_per_s", l.output_tokens_per_s},
          {"requests_per_s", l.requests_per_s},
          {"tau", l.tau ? nlohmann::json(*l.tau) : nlohmann::json(nullptr)},
          {"mean_verified_length",
           l.mean_verified_length ? nlohmann::json(*l.mean_verified_length) : nlohmann::json(nullptr)},
          {"drafter_time_share",
           l.drafter_time_share ? nlohmann::json(*l.drafter_time_share) : nlohmann::json(nullptr)},
          {"prefix_cache_hit_rate",
           l.prefix_cache_hit_rate ? nlohmann::json(*l.prefix_cache_hit_rate) : nlohmann::json(nullptr)},
          {"first_error", l.first_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(l.first_error)}};
}

}  // namespace dspark
