// What the load generator measures and how it is summarised (DESIGN §6, vLLM's
// definitions): per request TTFT, end-to-end latency, output tokens and the gaps between
// streamed chunks; per load level the median and p99 of TTFT and of
// TPOT = (latency - TTFT) / (output_tokens - 1), the median inter-token latency (ITL, gaps
// between token-carrying SSE chunks), output tokens/s and requests/s over the level's
// wall time, the mean acceptance length tau = 1 + Δaccepted / Δdrafts and (dspark servers)
// the mean verified length L from the server's Prometheus counters before and after the level,
// and the prefix-cache hit rate = Δhits / Δqueries (prompt tokens) when the server counts them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace dspark {

struct RequestRecord {
  bool ok = false;
  std::string error;            // why it failed
  double ttft = 0;              // seconds: send -> first chunk with text
  double latency = 0;           // seconds: send -> end of the response
  int64_t prompt_tokens = 0;    // from the usage block; 0 when the server sent none
  int64_t output_tokens = 0;    // usage block, else the number of text chunks
  std::vector<double> itl;      // seconds between consecutive text chunks
  std::string text;             // the generated text (the chunks' text joined), for multi-turn prompts
};

struct LevelResult {
  std::string mode;             // "concurrency" or "rate"
  double level = 0;             // workers, or requests per second
  int64_t num_requests = 0;     // sent
  int64_t num_failed = 0;
  double duration_s = 0;        // first send -> last response
  int64_t output_tokens = 0;    // of successful requests
  double ttft_median_ms = 0, ttft_p99_ms = 0;
  double tpot_median_ms = 0, tpot_p99_ms = 0;
  double itl_median_ms = 0;
  double output_tokens_per_s = 0;
  double requests_per_s = 0;    // successful requests per second
  std::optional<double> tau;    // when the server exposes speculative-decoding counters
  std::optional<double> mean_verified_length;  // drafts verified per request-round (dspark servers)
  std::optional<double> drafter_time_share;    // of the engine's time: drafting + drafter context (dspark)
  std::optional<double> prefix_cache_hit_rate; // prompt tokens found cached / looked up
  std::string first_error;      // one failure message, for the report
};

// Linear interpolation between closest ranks (numpy's default); 0 for no values.
double percentile(std::vector<double> values, double q);

LevelResult summarize(const std::string& mode, double level, const std::vector<RequestRecord>& records,
                      double duration_s);

// Speculative-decoding counters (and dspark's engine time split) scraped from a Prometheus text page.
struct SpecCounters {
  double drafts = 0;
  double draft_tokens = 0;
  double accepted_tokens = 0;
  double verified_rounds = 0;   // request-rounds counted by dspark:spec_decode_verified_length
  double verified_drafts = 0;   // sum over those rounds of the drafts verified (L)
  double forward_seconds = 0;   // dspark:model_forward_seconds
  double drafter_seconds = 0;   // dspark:spec_decode_draft_seconds + ..._context_seconds
};

// Reads dspark's counters (dspark:spec_decode_num_drafts, ..._num_draft_tokens,
// ..._num_accepted_tokens) or vLLM's (vllm:spec_decode_num_drafts_total, ...), summed over
// label sets; nullopt when the page has none of them.
std::optional<SpecCounters> parse_spec_counters(std::string_view prometheus_text);
// 1 + Δaccepted / Δdrafts; nullopt without counters or without new drafts.
std::optional<double> mean_acceptance_length(const std::optional<SpecCounters>& before,
                                             const std::optional<SpecCounters>& after);

// Mean drafts verified per decoding request-round between two scrapes (the load-aware
// schedule's L); nullopt without dspark's verified-length counters or without new rounds.
std::optional<double> mean_verified_length(const std::optional<SpecCounters>& before,
                                           const std::optional<SpecCounters>& after);

// Share of the engine's time (target forwards + drafter) spent in the drafter between two
// scrapes; nullopt without dspark's timing counters or without engine time in between.
std::optional<double> drafter_time_share(const std::optional<SpecCounters>& before,
                                         const std::optional<SpecCounters>& after);

// Prefix-cache counters in prompt tokens (vLLM's meaning): looked up, and found cached.
struct PrefixCacheCounters {
  double queries = 0;
  double hits = 0;
};

// Reads dspark:prefix_cache_queries / dspark:prefix_cache_hits or vLLM's
// vllm:prefix_cache_queries_total / ..._hits_total, summed over label sets; nullopt unless
// the page has both.
std::optional<PrefixCacheCounters> parse_prefix_cache_counters(std::string_view prometheus_text);
// Δhits / Δqueries; nullopt without counters or without new queries.
std::optional<double> prefix_cache_hit_rate(const std::optional<PrefixCacheCounters>& before,
                                            const std::optional<PrefixCacheCounters>& after);

std::string format_table(const std::vector<LevelResult>& levels);
nlohmann::json to_json(const LevelResult& level);

}  // namespace dspark
