// ServerMetrics: what GET /metrics reports, in Prometheus text format, with vLLM's
// definitions (DESIGN §6) under the "dspark:" prefix:
//
//   dspark:spec_decode_num_drafts                      counter  rounds with >= 1 draft token
//   dspark:spec_decode_num_draft_tokens                counter  draft tokens verified
//   dspark:spec_decode_num_accepted_tokens             counter  draft tokens accepted
//   dspark:spec_decode_num_accepted_tokens_per_pos{position="i"}  counter (i from 0)
//   dspark:num_requests_running / _waiting             gauge
//   dspark:kv_cache_blocks_used / _total               gauge
//   dspark:kv_cache_usage_perc                         gauge    used / total (0..1)
//   dspark:kv_cache_blocks_cached                      gauge    blocks holding a cached prefix
//   dspark:prefix_cache_queries / _hits                counter  prompt tokens looked up / found cached
//   dspark:num_preemptions                             counter
//   dspark:num_requests_finished{finished_reason="stop|length|cancelled|error"}  counter
//   dspark:num_requests_rejected                       counter  refused: queue full
//   dspark:prompt_tokens / dspark:generation_tokens    counter  of finished requests
//   dspark:num_engine_steps                            counter
//   dspark:time_to_first_token_seconds                 histogram  submit -> first token
//   dspark:time_per_output_token_seconds               histogram  (e2e - TTFT) / (tokens - 1)
//   dspark:e2e_request_latency_seconds                 histogram  submit -> finished
//   dspark:kernel_info{isa,matmul,weights}             gauge    1: the kernels this process runs
//   dspark:weights_kv_resident_bytes                   gauge    packed weights and KV pools in memory
//   dspark:weights_kv_huge_page_bytes                  gauge    of them, in 2 MB pages (core/huge_pages.h)
//
// Latencies are observed for requests that finished with "stop" or "length" (cancelled
// and failed ones would skew them). observe() may be called from any thread.
#pragma once

#include <mutex>
#include <string>

#include "engine/engine_loop.h"
#include "server/prometheus.h"

namespace dspark {

class ServerMetrics {
 public:
  ServerMetrics();
  // The labels of dspark:kernel_info (ISA cap, matmul kernel, weight format).
  struct KernelInfo {
    std::string isa;
    std::string matmul;
    std::string weights;
  };
  explicit ServerMetrics(KernelInfo kernels);

  void observe(const FinishedRequest& request);
  std::string render(const EngineLoopStats& stats) const;

 private:
  mutable std::mutex mu_;
  Histogram ttft_;
  Histogram tpot_;
  Histogram e2e_;
  KernelInfo kernels_;
};

}  // namespace dspark
