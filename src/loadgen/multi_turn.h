// Multi-turn benchmark: whole conversations (MT-bench: two user turns each) sent turn by
// turn through a LoadGenerator, each turn's prompt repeating the conversation so far
// (earlier questions and the server's own answers to them). A server with prefix caching
// finds that history in its KV cache and prefills only the newest question, so the later
// turns' TTFT is what it gives; the run also reports the server's prefix-cache hit rate
// = Δhits / Δqueries (prompt tokens, vLLM's counters) between a scrape before and after.
//
// Completions endpoint, turn k (1-based), in the plain format of bench/dataset.h:
//   "Question: {t1}\nAnswer:{a1}\nQuestion: {t2}\nAnswer:{a2}\n ... Question: {tk}\nAnswer:"
// where a_i is the text the server generated for turn i, exactly as streamed (so the
// history is byte-identical to turn i's prompt plus its answer). Chat endpoint: the
// messages user t1, assistant a1, ..., user tk (the server's chat template renders them).
//
// Concurrency N: N workers, each taking the next whole conversation (file order) and
// sending its turns one after another. A turn that fails ends its conversation; its later
// turns count as failed ("not sent").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loadgen/dataset.h"
#include "loadgen/load_generator.h"

namespace dspark {

// The completions prompt of turn answers.size() + 1: every earlier turn with its answer,
// then the next question. Throws Error when the conversation has no turn left.
std::string multi_turn_prompt(const Conversation& conversation, const std::vector<std::string>& answers);
// The chat history of the same turn: user/assistant pairs, then the next user turn.
std::vector<ChatMessage> multi_turn_messages(const Conversation& conversation,
                                             const std::vector<std::string>& answers);

// One conversation as it was sent.
struct ConversationRecord {
  std::string id;
  std::vector<std::string> prompts;    // per turn sent: the completions prompt, or the last user turn (chat)
  std::vector<RequestRecord> turns;    // per turn of the conversation (text = the answer)
};

// The statistics of one turn index over all conversations that have it.
struct TurnSummary {
  int64_t turn = 0;               // 1-based
  int64_t num_requests = 0;       // conversations with this turn
  int64_t num_failed = 0;         // failed, or not sent after an earlier turn failed
  double ttft_p50_ms = 0, ttft_p90_ms = 0;
  double tpot_p50_ms = 0;         // (latency - TTFT) / (output_tokens - 1), requests with >= 2 tokens
  double e2e_p50_ms = 0;
  double mean_prompt_tokens = 0;  // from the usage blocks; 0 when the server sent none
  int64_t output_tokens = 0;      // of successful requests
  std::string first_error;
};

struct MultiTurnResult {
  int64_t concurrency = 0;
  int64_t num_conversations = 0;
  double duration_s = 0;                         // first send -> last response
  std::vector<TurnSummary> turns;                // turn 1, 2, ...
  std::optional<PrefixCacheCounters> prefix_cache_delta;  // Δqueries, Δhits over the run
  std::optional<double> prefix_cache_hit_rate;   // Δhits / Δqueries
  std::vector<ConversationRecord> conversations; // in input order
};

// Summaries per turn index of finished conversations.
std::vector<TurnSummary> summarize_turns(const std::vector<ConversationRecord>& conversations);

// Runs every conversation (N workers) and scrapes the server's counters around the run.
// Throws Error for concurrency < 1 or no conversations; failed requests are recorded.
// progress gets (requests done, failed, total requests).
MultiTurnResult run_multi_turn(const LoadGenerator& generator, const std::vector<Conversation>& conversations,
                               int64_t concurrency, const ProgressCallback& progress = {});

std::string format_multi_turn_table(const MultiTurnResult& result);
// The summaries, and per conversation and turn its timings, token counts and answer text
// (so that runs can be compared answer by answer, e.g. with and without prefix caching).
nlohmann::json to_json(const MultiTurnResult& result);

}  // namespace dspark
