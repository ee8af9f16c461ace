#include "loadgen/multi_turn.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/check.h"
#include "core/clock.h"

namespace dspark {
namespace {

double ms(double seconds) { return seconds * 1e3; }

void check_next_turn(const Conversation& conversation, const std::vector<std::string>& answers) {
  DSPARK_CHECK(answers.size() < conversation.turns.size(), "conversation {} has {} turns, asked for turn {}",
               conversation.id, conversation.turns.size(), answers.size() + 1);
}

// Sends the turns of one conversation in order; stops at the first failure.
ConversationRecord run_conversation(const LoadGenerator& generator, const Conversation& conversation,
                                    const std::function<void(bool ok)>& on_request) {
  const bool chat = generator.options().endpoint == "chat";
  ConversationRecord record;
  record.id = conversation.id;
  record.turns.resize(conversation.turns.size());
  std::vector<std::string> answers;
  for (size_t t = 0; t < conversation.turns.size(); ++t) {
    RequestRecord& rec = record.turns[t];
    if (t > 0 && !record.turns[t - 1].ok) {
      rec.error = "not sent: an earlier turn failed";
      on_request(false);
      continue;
    }
    if (chat) {
      record.prompts.push_back(conversation.turns[t]);
      rec = generator.send_chat(multi_turn_messages(conversation, answers));
    } else {
      record.prompts.push_back(multi_turn_prompt(conversation, answers));
      rec = generator.send(record.prompts.back());
    }
    answers.push_back(rec.text);
    on_request(rec.ok);
  }
  return record;
}

}  // namespace

std::string multi_turn_prompt(const Conversation& conversation, const std::vector<std::string>& answers) {
  check_next_turn(conversation, answers);
  std::string prompt;
  for (size_t t = 0; t < answers.size(); ++t) {
    prompt += "Question: " + conversation.turns[t] + "\nAnswer:" + answers[t] + "\n";
  }
  return prompt + "Question: " + conversation.turns[answers.size()] + "\nAnswer:";
}

std::vector<ChatMessage> multi_turn_messages(const Conversation& conversation,
                                             const std::vector<std::string>& answers) {
  check_next_turn(conversation, answers);
  std::vector<ChatMessage> messages;
  for (size_t t = 0; t < answers.size(); ++t) {
    messages.push_back({"user", conversation.turns[t]});
    messages.push_back({"assistant", answers[t]});
  }
  messages.push_back({"user", conversation.turns[answers.size()]});
  return messages;
}

std::vector<TurnSummary> summarize_turns(const std::vector<ConversationRecord>& conversations) {
  size_t max_turns = 0;
  for (const ConversationRecord& c : conversations) max_turns = std::max(max_turns, c.turns.size());
  std::vector<TurnSummary> out;
  for (size_t t = 0; t < max_turns; ++t) {
    TurnSummary s;
    s.turn = static_cast<int64_t>(t) + 1;
    std::vector<double> ttft, tpot, e2e;
    double prompt_tokens = 0;
    for (const ConversationRecord& c : conversations) {
      if (t >= c.turns.size()) continue;
      const RequestRecord& rec = c.turns[t];
      ++s.num_requests;
      if (!rec.ok) {
        ++s.num_failed;
        if (s.first_error.empty()) s.first_error = rec.error;
        continue;
      }
      ttft.push_back(rec.ttft);
      e2e.push_back(rec.latency);
      if (rec.output_tokens > 1) tpot.push_back((rec.latency - rec.ttft) / static_cast<double>(rec.output_tokens - 1));
      prompt_tokens += static_cast<double>(rec.prompt_tokens);
      s.output_tokens += rec.output_tokens;
    }
    s.ttft_p50_ms = ms(percentile(ttft, 50));
    s.ttft_p90_ms = ms(percentile(ttft, 90));
    s.tpot_p50_ms = ms(percentile(tpot, 50));
    s.e2e_p50_ms = ms(percentile(e2e, 50));
    if (!ttft.empty()) s.mean_prompt_tokens = prompt_tokens / static_cast<double>(ttft.size());
    out.push_back(std::move(s));
  }
  return out;
}

MultiTurnResult run_multi_turn(const LoadGenerator& generator, const std::vector<Conversation>& conversations,
                               int64_t concurrency, const ProgressCallback& progress) {
  DSPARK_CHECK(concurrency >= 1, "concurrency must be >= 1, got {}", concurrency);
  DSPARK_CHECK(!conversations.empty(), "no conversations to send");
  int64_t total = 0;
  for (const Conversation& c : conversations) total += static_cast<int64_t>(c.turns.size());
  std::mutex progress_mu;
  int64_t done = 0, failed = 0;
  auto on_request = [&](bool ok) {
    std::lock_guard lock(progress_mu);
    ++done;
    if (!ok) ++failed;
    if (progress) progress(done, failed, total);
  };

  MultiTurnResult result;
  result.concurrency = concurrency;
  result.num_conversations = static_cast<int64_t>(conversations.size());
  result.conversations.resize(conversations.size());
  const ServerCounters before = generator.scrape_counters();
  const double start = now_seconds();
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  const auto num_workers = std::min(static_cast<size_t>(concurrency), conversations.size());
  for (size_t w = 0; w < num_workers; ++w) {
    workers.emplace_back([&] {
      for (size_t i = next++; i < conversations.size(); i = next++) {
        result.conversations[i] = run_conversation(generator, conversations[i], on_request);
      }
    });
  }
  for (auto& t : workers) t.join();
  result.duration_s = now_seconds() - start;
  const ServerCounters after = generator.scrape_counters();
  result.turns = summarize_turns(result.conversations);
  result.prefix_cache_hit_rate = prefix_cache_hit_rate(before.prefix_cache, after.prefix_cache);
  if (before.prefix_cache && after.prefix_cache) {
    result.prefix_cache_delta = PrefixCacheCounters{after.prefix_cache->queries - before.prefix_cache->queries,
                                                    after.prefix_cache->hits - before.prefix_cache->hits};
  }
  return result;
}

std::string format_multi_turn_table(const MultiTurnResult& r) {
  std::string out = fmt::format("concurrency {}: {} conversations in {:.1f} s\n", r.concurrency, r.num_conversations,
                                r.duration_s);
  out += fmt::format("{:<5} {:>5} {:>5} {:>10} {:>10} {:>9} {:>10} {:>9} {:>8}\n", "turn", "reqs", "fail",
                     "TTFT p50", "TTFT p90", "TPOT p50", "e2e p50", "prompt", "out tok");
  for (const TurnSummary& t : r.turns) {
    out += fmt::format("{:<5} {:>5} {:>5} {:>8.1f}ms {:>8.1f}ms {:>7.2f}ms {:>8.1f}ms {:>9.1f} {:>8}\n", t.turn,
                       t.num_requests, t.num_failed, t.ttft_p50_ms, t.ttft_p90_ms, t.tpot_p50_ms, t.e2e_p50_ms,
                       t.mean_prompt_tokens, t.output_tokens);
  }
  if (r.prefix_cache_hit_rate && r.prefix_cache_delta) {
    out += fmt::format("prefix-cache hit rate: {:.1f}% ({:.0f} of {:.0f} prompt tokens)\n",
                       100.0 * *r.prefix_cache_hit_rate, r.prefix_cache_delta->hits, r.prefix_cache_delta->queries);
  } else {
    out += "prefix-cache hit rate: n/a\n";
  }
  return out;
}

nlohmann::json to_json(const MultiTurnResult& r) {
  nlohmann::json turns = nlohmann::json::array();
  for (const TurnSummary& t : r.turns) {
    turns.push_back({{"turn", t.turn},
                     {"num_requests", t.num_requests},
                     {"num_failed", t.num_failed},
                     {"ttft_p50_ms", t.ttft_p50_ms},
                     {"ttft_p90_ms", t.ttft_p90_ms},
                     {"tpot_p50_ms", t.tpot_p50_ms},
                     {"e2e_p50_ms", t.e2e_p50_ms},
                     {"mean_prompt_tokens", t.mean_prompt_tokens},
                     {"output_tokens", t.output_tokens},
                     {"first_error", t.first_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(t.first_error)}});
  }
  nlohmann::json conversations = nlohmann::json::array();
  for (const ConversationRecord& c : r.conversations) {
    nlohmann::json records = nlohmann::json::array();
    for (const RequestRecord& rec : c.turns) {
      records.push_back({{"ok", rec.ok},
                         {"ttft_ms", ms(rec.ttft)},
                         {"latency_ms", ms(rec.latency)},
                         {"prompt_tokens", rec.prompt_tokens},
                         {"output_tokens", rec.output_tokens},
                         {"text", rec.text},
                         {"error", rec.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(rec.error)}});
    }
    conversations.push_back({{"id", c.id}, {"turns", std::move(records)}});
  }
  const auto optional = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"concurrency", r.concurrency},
          {"num_conversations", r.num_conversations},
          {"duration_s", r.duration_s},
          {"turns", turns},
          {"prefix_cache_hit_rate", optional(r.prefix_cache_hit_rate)},
          {"prefix_cache_queries", optional(r.prefix_cache_delta ? std::optional(r.prefix_cache_delta->queries)
                                                                 : std::nullopt)},
          {"prefix_cache_hits",
           optional(r.prefix_cache_delta ? std::optional(r.prefix_cache_delta->hits) : std::nullopt)},
          {"conversations", std::move(conversations)}};
}

}  // namespace dspark
