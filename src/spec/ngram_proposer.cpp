#include "spec/ngram_proposer.h"

#include <algorithm>

#include "core/check.h"

namespace dspark {

void NgramOptions::validate() const {
  DSPARK_CHECK(min_n >= 1, "NgramOptions.min_n must be >= 1, got {}", min_n);
  DSPARK_CHECK(max_n >= min_n, "NgramOptions.max_n ({}) must be >= min_n ({})", max_n, min_n);
  DSPARK_CHECK(num_speculative_tokens >= 1,
               "NgramOptions.num_speculative_tokens must be >= 1, got {}", num_speculative_tokens);
}

NgramProposer::NgramProposer(const NgramOptions& options) : options_(options) {
  options_.validate();
}

std::span<const int32_t> NgramProposer::propose(std::span<const int32_t> tokens) const {
  const auto size = static_cast<int64_t>(tokens.size());
  // An earlier occurrence must end at or before size - 1, so the tail is at most size - 1 long.
  const int64_t max_n = std::min<int64_t>(options_.max_n, size - 1);
  if (max_n < options_.min_n) return {};

  const int32_t* t = tokens.data();  // [size]
  const int32_t last = t[size - 1];
  int64_t best_len = options_.min_n - 1;  // a match must beat this to count
  int64_t best_end = -1;                  // exclusive end of the chosen occurrence
  // Scanning ends from the most recent backwards and replacing only on a strictly longer
  // match yields the longest tail, most recent occurrence. A match of length m ending at e
  // means t[e-m..e) == t[size-m..size).
  for (int64_t end = size - 1; end >= 1; --end) {
    if (t[end - 1] != last) continue;
    const int64_t limit = std::min(max_n, end);
    int64_t len = 1;
    while (len < limit && t[end - 1 - len] == t[size - 1 - len]) ++len;
    if (len > best_len) {
      best_len = len;
      best_end = end;
      if (len == max_n) break;  // nothing earlier can be longer, and this one is more recent
    }
  }
  if (best_end < 0) return {};
  const int64_t count = std::min<int64_t>(options_.num_speculative_tokens, size - best_end);
  return tokens.subspan(static_cast<size_t>(best_end), static_cast<size_t>(count));
}

void NgramProposer::propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) {
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::span<const int32_t> found = propose(requests[i].tokens);
    drafts[i] = Draft{found.first(std::min<size_t>(found.size(), std::max(requests[i].max_drafts, 0))), nullptr, nullptr};
  }
}

}  // namespace dspark
