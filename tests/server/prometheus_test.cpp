// Prometheus text format: histogram buckets, the writer's exact lines, and a structural
// check of the whole /metrics page (every sample belongs to a declared family, names and
// labels are well formed, histograms are cumulative and end at +Inf = count). Also the
// load generator's reader of the same page.
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "loadgen/bench_report.h"
#include "core/check.h"
#include "server/prometheus.h"
#include "server/server_metrics.h"

namespace dspark {
namespace {

TEST(Histogram, BucketsAreLessOrEqualAndCumulative) {
  Histogram h({0.1, 1.0, 10.0});
  for (double v : {0.05, 0.1, 0.5, 1.0, 3.0, 100.0}) h.observe(v);
  h.observe(std::nan(""));  // ignored
  EXPECT_EQ(h.cumulative_counts(), (std::vector<uint64_t>{2, 4, 5, 6}));
  EXPECT_EQ(h.count(), 6u);
  EXPECT_DOUBLE_EQ(h.sum(), 0.05 + 0.1 + 0.5 + 1.0 + 3.0 + 100.0);
  EXPECT_THROW(Histogram({1.0, 1.0}), Error);
  EXPECT_THROW(Histogram({2.0, 1.0}), Error);
}

TEST(PrometheusWriter, ExactLines) {
  PrometheusWriter w;
  w.counter("dspark:x", "Help text.", 3);
  w.family("dspark:y", "Labelled.", "gauge");
  w.sample("dspark:y", 0.25, {{"position", "0"}, {"name", "a\"b\\c\nd"}});
  Histogram h({0.5, 2.0});
  h.observe(1.0);
  w.histogram("dspark:h", "Latency.", h);
  EXPECT_EQ(w.text(),
            "# HELP dspark:x Help text.\n"
            "# TYPE dspark:x counter\n"
            "dspark:x 3\n"
            "# HELP dspark:y Labelled.\n"
            "# TYPE dspark:y gauge\n"
            "dspark:y{position=\"0\",name=\"a\\\"b\\\\c\\nd\"} 0.25\n"
            "# HELP dspark:h Latency.\n"
            "# TYPE dspark:h histogram\n"
            "dspark:h_bucket{le=\"0.5\"} 0\n"
            "dspark:h_bucket{le=\"2\"} 1\n"
            "dspark:h_bucket{le=\"+Inf\"} 1\n"
            "dspark:h_sum 1\n"
            "dspark:h_count 1\n");
  EXPECT_EQ(format_prometheus_value(1e20), "1e+20");
  EXPECT_EQ(format_prometheus_value(std::numeric_limits<double>::infinity()), "+Inf");
}

EngineLoopStats sample_stats() {
  EngineLoopStats s;
  s.engine.num_running = 2;
  s.engine.kv_blocks_used = 7;
  s.engine.kv_blocks_total = 100;
  s.engine.num_preemptions = 1;
  s.in_flight = 5;
  s.spec = SpecDecodeMetrics(3);
  s.spec.record_round(3, 2);
  s.spec.record_round(3, 0);
  s.spec.record_round(2, 2);
  s.finished[static_cast<size_t>(FinishReason::kStop)] = 2;
  s.finished[static_cast<size_t>(FinishReason::kEos)] = 1;
  s.finished[static_cast<size_t>(FinishReason::kLength)] = 4;
  s.finished[static_cast<size_t>(FinishReason::kCancelled)] = 1;
  s.num_rejected = 6;
  s.schedule.forward_seconds = 2.5;
  s.schedule.draft_seconds = 0.75;
  s.schedule.context_seconds = 0.25;
  // Greedy head drafts whose first two survive every round: offsets learned at positions 0-1.
  for (int i = 0; i < 4; ++i) s.confidence.observe(ConfidenceSource::kHead, true, std::vector<float>{0.5f, 0.5f}, 2);
  return s;
}

TEST(ServerMetrics, PageIsWellFormedAndComplete) {
  ServerMetrics metrics;
  FinishedRequest r;
  r.output_tokens = 11;
  r.timing = {10.0, 10.02, 10.52};
  metrics.observe(r);
  r.finish_reason = FinishReason::kCancelled;  // not a latency sample
  metrics.observe(r);
  const std::string page = metrics.render(sample_stats());

  const std::regex sample_re(
      R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*")*\})? (\S+)$)");
  const std::regex type_re(R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram)$)");
  std::map<std::string, std::string> families;
  std::map<std::string, double> values;  // name + labels -> value
  std::istringstream in(page);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (line.rfind("# HELP ", 0) == 0) continue;
    if (std::regex_match(line, m, type_re)) {
      EXPECT_FALSE(families.contains(m[1])) << "family declared twice: " << m[1];
      families[m[1]] = m[2];
      continue;
    }
    ASSERT_TRUE(std::regex_match(line, m, sample_re)) << "malformed line: " << line;
    std::string family = m[1];
    if (!families.contains(family)) {
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        const std::string s(suffix);
        if (family.size() > s.size() && family.compare(family.size() - s.size(), s.size(), s) == 0) {
          family.resize(family.size() - s.size());
          break;
        }
      }
      ASSERT_TRUE(families.contains(family)) << "sample before its # TYPE: " << line;
      EXPECT_EQ(families[family], "histogram");
    }
    values[std::string(m[1]) + std::string(m[2])] = std::stod(m[3] == "+Inf" ? "inf" : std::string(m[3]));
  }
  for (const char* name : {"dspark:spec_decode_num_drafts", "dspark:spec_decode_num_draft_tokens",
                           "dspark:spec_decode_num_accepted_tokens", "dspark:spec_decode_num_accepted_tokens_per_pos",
                           "dspark:spec_decode_confidence_offset",
                           "dspark:num_requests_running", "dspark:num_requests_waiting", "dspark:kv_cache_blocks_used",
                           "dspark:kv_cache_blocks_total", "dspark:num_preemptions", "dspark:num_requests_finished",
                           "dspark:time_to_first_token_seconds", "dspark:time_per_output_token_seconds",
                           "dspark:e2e_request_latency_seconds"}) {
    EXPECT_TRUE(families.contains(name)) << name;
  }
  EXPECT_EQ(values["dspark:spec_decode_num_drafts"], 3);
  EXPECT_EQ(values["dspark:model_forward_seconds"], 2.5);
  EXPECT_EQ(values["dspark:spec_decode_draft_seconds"], 0.75);
  EXPECT_EQ(values["dspark:spec_decode_context_seconds"], 0.25);
  EXPECT_EQ(values["dspark:spec_decode_num_draft_tokens"], 8);
  EXPECT_EQ(values["dspark:spec_decode_num_accepted_tokens"], 4);
  EXPECT_EQ(values["dspark:spec_decode_num_accepted_tokens_per_pos{position=\"0\"}"], 2);
  EXPECT_EQ(values["dspark:spec_decode_num_accepted_tokens_per_pos{position=\"1\"}"], 2);
  EXPECT_EQ(values["dspark:spec_decode_num_accepted_tokens_per_pos{position=\"2\"}"], 0);
  const EngineLoopStats stats = sample_stats();
  for (int32_t j = 0; j < 2; ++j) {
    const std::string key = "dspark:spec_decode_confidence_offset{source=\"head\",requests=\"greedy\",position=\"" +
                            std::to_string(j) + "\"}";
    ASSERT_TRUE(values.contains(key)) << key;
    EXPECT_GT(values[key], 0.5);  // survival 1 where 0.5 was predicted: the offset is positive
    EXPECT_NEAR(values[key], stats.confidence.offset(ConfidenceSource::kHead, true, j), 1e-9);
  }
  for (const auto& [key, value] : values) {  // nothing for positions, sources or kinds never verified
    if (key.starts_with("dspark:spec_decode_confidence_offset")) {
      EXPECT_TRUE(key.find("source=\"head\",requests=\"greedy\"") != std::string::npos) << key;
    }
  }
  EXPECT_EQ(values["dspark:num_requests_running"], 2);
  EXPECT_EQ(values["dspark:num_requests_waiting"], 3);
  EXPECT_EQ(values["dspark:kv_cache_blocks_used"], 7);
  EXPECT_EQ(values["dspark:kv_cache_blocks_total"], 100);
  EXPECT_EQ(values["dspark:num_requests_finished{finished_reason=\"stop\"}"], 3);  // stop strings + EOS
  EXPECT_EQ(values["dspark:num_requests_finished{finished_reason=\"length\"}"], 4);
  EXPECT_EQ(values["dspark:num_requests_finished{finished_reason=\"cancelled\"}"], 1);
  EXPECT_EQ(values["dspark:num_requests_rejected"], 6);
  // One latency sample: TTFT 20 ms, e2e 520 ms, TPOT 500 ms / 10.
  EXPECT_EQ(values["dspark:time_to_first_token_seconds_count"], 1);
  EXPECT_NEAR(values["dspark:time_to_first_token_seconds_sum"], 0.02, 1e-9);
  EXPECT_EQ(values["dspark:time_to_first_token_seconds_bucket{le=\"0.01\"}"], 0);
  EXPECT_EQ(values["dspark:time_to_first_token_seconds_bucket{le=\"0.02\"}"], 1);
  EXPECT_NEAR(values["dspark:time_per_output_token_seconds_sum"], 0.05, 1e-9);
  EXPECT_NEAR(values["dspark:e2e_request_latency_seconds_sum"], 0.52, 1e-9);
  EXPECT_EQ(values["dspark:e2e_request_latency_seconds_bucket{le=\"+Inf\"}"], 1);

  // The load generator reads the same counters back.
  const auto counters = parse_spec_counters(page);
  ASSERT_TRUE(counters.has_value());
  EXPECT_EQ(counters->drafts, 3);
  EXPECT_EQ(counters->draft_tokens, 8);
  EXPECT_EQ(counters->accepted_tokens, 4);
}

TEST(SpecCounters, ReadsVllmNamesAndComputesTau) {
  const std::string vllm =
      "# TYPE vllm:spec_decode_num_drafts_total counter\n"
      "vllm:spec_decode_num_drafts_total{engine=\"0\",model_name=\"m\"} 10.0\n"
      "vllm:spec_decode_num_drafts_total{engine=\"1\",model_name=\"m\"} 10.0\n"
      "vllm:spec_decode_num_accepted_tokens_total{engine=\"0\",model_name=\"m\"} 30.0\n"
      "vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"0\"} 99\n";
  const auto c = parse_spec_counters(vllm);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->drafts, 20);
  EXPECT_EQ(c->accepted_tokens, 30);  // the per-position family is not the total
  EXPECT_FALSE(parse_spec_counters("# nothing\nother_metric 1\n").has_value());
  const SpecCounters before{10, 40, 20}, after{30, 120, 70};
  EXPECT_DOUBLE_EQ(*mean_acceptance_length(before, after), 1.0 + 50.0 / 20.0);
  EXPECT_FALSE(mean_acceptance_length(before, before).has_value());  // no new drafts
  EXPECT_FALSE(mean_acceptance_length(std::nullopt, after).has_value());
}

}  // namespace
}  // namespace dspark
