#include "spec/ngram_proposer.h"

#include <algorithm>

#include "core/check.h"
#include "spec/tail_match.h"

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
  const TailMatch match = find_tail_match(tokens, options_.min_n, options_.max_n);
  if (!match.found()) return {};
  const int64_t count = std::min<int64_t>(options_.num_speculative_tokens, static_cast<int64_t>(tokens.size()) - match.end);
  return tokens.subspan(static_cast<size_t>(match.end), static_cast<size_t>(count));
}

void NgramProposer::propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) {
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::span<const int32_t> found = propose(requests[i].tokens);
    drafts[i] = Draft{found.first(std::min<size_t>(found.size(), std::max(requests[i].max_drafts, 0))), nullptr, nullptr};
  }
}

}  // namespace dspark
