#include "server/server_metrics.h"

#include <string>

#include "core/huge_pages.h"

namespace dspark {

ServerMetrics::ServerMetrics()
    : ttft_({0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
             20.0, 40.0, 80.0}),
      tpot_({0.0005, 0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2,
             0.3, 0.4, 0.5, 0.75, 1.0, 2.5}),
      e2e_({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 300.0,
            600.0}) {}

ServerMetrics::ServerMetrics(KernelInfo kernels) : ServerMetrics() { kernels_ = std::move(kernels); }

void ServerMetrics::observe(const FinishedRequest& r) {
  if (r.finish_reason == FinishReason::kCancelled || r.finish_reason == FinishReason::kError) return;
  const RequestTiming& t = r.timing;
  if (t.finish == 0) return;
  std::lock_guard lock(mu_);
  e2e_.observe(t.finish - t.submit);
  if (t.first_token > 0) {
    ttft_.observe(t.first_token - t.submit);
    if (r.output_tokens > 1) tpot_.observe((t.finish - t.first_token) / static_cast<double>(r.output_tokens - 1));
  }
}

std::string ServerMetrics::render(const EngineLoopStats& s) const {
  PrometheusWriter w;
  w.counter("dspark:spec_decode_num_drafts", "Verification rounds with at least one draft token.",
            static_cast<double>(s.spec.num_drafts));
  w.counter("dspark:spec_decode_num_draft_tokens", "Draft tokens verified.", static_cast<double>(s.spec.num_draft_tokens));
  w.counter("dspark:spec_decode_num_accepted_tokens", "Draft tokens accepted.",
            static_cast<double>(s.spec.num_accepted_tokens));
  w.family("dspark:spec_decode_verified_length", "Request-rounds by the number of drafts verified (L).", "counter");
  for (size_t l = 0; l < s.schedule.verified_length_counts.size(); ++l) {
    w.sample("dspark:spec_decode_verified_length", static_cast<double>(s.schedule.verified_length_counts[l]),
             {{"length", std::to_string(l)}});
  }
  w.gauge("dspark:spec_decode_mean_verified_length", "Mean drafts verified per decoding request-round.",
          s.schedule.mean_verified_length());
  w.counter("dspark:spec_decode_predicted_accepted_tokens", "Accepted drafts the scheduler predicted (adaptive).",
            s.schedule.predicted_accepted);
  w.counter("dspark:spec_decode_realized_accepted_tokens", "Accepted drafts among those verified.",
            static_cast<double>(s.schedule.realized_accepted));
  w.counter("dspark:spec_decode_grammar_cut_draft_tokens",
            "Drafts an output's grammar refused, cut before verification (copying speculators' drafts in "
            "constrained outputs).",
            static_cast<double>(s.schedule.grammar_cut_drafts));
  w.counter("dspark:model_forward_seconds", "Wall time in target forwards.", s.schedule.forward_seconds);
  w.counter("dspark:spec_decode_draft_seconds", "Wall time in the proposer's drafting.", s.schedule.draft_seconds);
  w.counter("dspark:spec_decode_context_seconds",
            "Wall time in the proposer's context updates (a drafter's projection of target hidden states).",
            s.schedule.context_seconds);
  if (!kernels_.isa.empty()) {
    w.family("dspark:kernel_info", "The kernels this process runs (value 1).", "gauge");
    w.sample("dspark:kernel_info", 1.0,
             {{"isa", kernels_.isa}, {"matmul", kernels_.matmul}, {"weights", kernels_.weights}});
  }
  // Read from /proc/self/smaps at each scrape: transparent huge pages can be split or
  // collapsed while the server runs.
  const HugePageReport pages = huge_page_report();
  w.gauge("dspark:weights_kv_resident_bytes", "Resident bytes of the packed weights and KV pools.",
          static_cast<double>(pages.resident_bytes));
  w.gauge("dspark:weights_kv_huge_page_bytes",
          "Of the packed weights and KV pools, bytes in 2 MB pages (transparent huge pages: " +
              (pages.mode.empty() ? std::string("unknown") : pages.mode) + ").",
          static_cast<double>(pages.huge_bytes));
  if (!s.step_cost.empty()) {
    w.family("dspark:step_cost_steps_per_second", "Profiled target steps per second for a batch of B tokens.", "gauge");
    for (size_t b = 0; b < s.step_cost.size(); ++b) {
      w.sample("dspark:step_cost_steps_per_second", s.step_cost[b], {{"tokens", std::to_string(b + 1)}});
    }
    w.gauge("dspark:step_cost_time_ratio",
            "Target decoding steps' measured time over the profile's (moving average; the adaptive schedule "
            "converts the drafter's time by it).",
            s.schedule.step_time_ratio);
  }
  w.family("dspark:spec_decode_num_accepted_tokens_per_pos", "Draft tokens accepted at each draft position.", "counter");
  for (int32_t i = 0; i < s.spec.max_positions(); ++i) {
    w.sample("dspark:spec_decode_num_accepted_tokens_per_pos", static_cast<double>(s.spec.accepted_per_position[i]),
             {{"position", std::to_string(i)}});
  }
  w.family("dspark:spec_decode_confidence_offset",
           "Logit offset the engine learned for draft confidences from verified rounds, per confidence source, "
           "request kind and draft position (0: the drafter's own calibration holds).",
           "gauge");
  for (int source = 0; source < kNumConfidenceSources; ++source) {
    const auto src = static_cast<ConfidenceSource>(source);
    for (const bool greedy : {true, false}) {
      for (int32_t j = 0; j < s.confidence.num_positions(src, greedy); ++j) {
        w.sample("dspark:spec_decode_confidence_offset", s.confidence.offset(src, greedy, j),
                 {{"source", std::string(confidence_source_name(src))},
                  {"requests", greedy ? "greedy" : "sampled"},
                  {"position", std::to_string(j)}});
      }
    }
  }

  w.gauge("dspark:num_requests_running", "Requests holding KV blocks.", static_cast<double>(s.engine.num_running));
  w.gauge("dspark:num_requests_waiting", "Requests queued for admission (including not yet scheduled ones).",
          static_cast<double>(std::max<int64_t>(s.in_flight - s.engine.num_running, 0)));
  w.gauge("dspark:kv_cache_blocks_used", "KV cache blocks in use.", static_cast<double>(s.engine.kv_blocks_used));
  w.gauge("dspark:kv_cache_blocks_total", "KV cache blocks in the pool.", static_cast<double>(s.engine.kv_blocks_total));
  w.gauge("dspark:kv_cache_usage_perc", "Fraction of KV cache blocks in use.",
          s.engine.kv_blocks_total > 0 ? static_cast<double>(s.engine.kv_blocks_used) / s.engine.kv_blocks_total : 0.0);
  w.gauge("dspark:kv_cache_blocks_cached", "KV cache blocks holding a cached prefix (in use or evictable).",
          static_cast<double>(s.engine.kv_blocks_cached));
  w.counter("dspark:prefix_cache_queries", "Prompt tokens looked up in the prefix cache (once per request).",
            static_cast<double>(s.engine.prefix_cache_queries));
  w.counter("dspark:prefix_cache_hits", "Prompt tokens whose KV came from the prefix cache.",
            static_cast<double>(s.engine.prefix_cache_hits));
  w.counter("dspark:num_preemptions", "Requests preempted (KV blocks freed, recomputed later).",
            static_cast<double>(s.engine.num_preemptions));
  w.counter("dspark:num_engine_steps", "Engine steps (target forward passes).", static_cast<double>(s.engine.num_steps));

  w.family("dspark:num_requests_finished", "Finished requests by finish reason.", "counter");
  const int64_t stops = s.finished[static_cast<size_t>(FinishReason::kStop)] + s.finished[static_cast<size_t>(FinishReason::kEos)];
  w.sample("dspark:num_requests_finished", static_cast<double>(stops), {{"finished_reason", "stop"}});
  for (FinishReason r : {FinishReason::kLength, FinishReason::kCancelled, FinishReason::kError}) {
    w.sample("dspark:num_requests_finished", static_cast<double>(s.finished[static_cast<size_t>(r)]),
             {{"finished_reason", std::string(finish_reason_name(r))}});
  }
  w.counter("dspark:num_requests_rejected", "Requests refused because the queue was full.",
            static_cast<double>(s.num_rejected));
  w.counter("dspark:prompt_tokens", "Prompt tokens of finished requests.", static_cast<double>(s.prompt_tokens));
  w.counter("dspark:generation_tokens", "Generated tokens of finished requests.", static_cast<double>(s.generation_tokens));

  std::lock_guard lock(mu_);
  w.histogram("dspark:time_to_first_token_seconds", "Time from submission to the first generated token.", ttft_);
  w.histogram("dspark:time_per_output_token_seconds", "Mean time per generated token after the first.", tpot_);
  w.histogram("dspark:e2e_request_latency_seconds", "Time from submission to the end of the request.", e2e_);
  return w.text();
}

}  // namespace dspark
