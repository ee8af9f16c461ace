// Prompt-lookup drafting: propose the tokens that followed an earlier occurrence of the
// sequence's own tail.
//
// For a sequence t_0..t_{N-1} (prompt + output so far), the proposal is the up to
// num_speculative_tokens tokens that follow the most recent earlier occurrence of its
// longest matching tail of min_n..max_n tokens (spec/tail_match.h), cut at the end of the
// sequence. No match gives an empty proposal.
//
// The proposal is a view into the caller's token array (no copy, no allocation), valid as
// long as that array is. Drafts are deterministic, so they are verified as one-hot
// drafts (VerifyInput::draft_probs = nullptr).
#pragma once

#include <cstdint>
#include <span>

#include "spec/proposer.h"

namespace dspark {

struct NgramOptions {
  int32_t min_n = 1;                   // shortest tail worth matching (1 = single token)
  int32_t max_n = 4;                   // longest tail tried first
  int32_t num_speculative_tokens = 5;  // most tokens proposed per round

  void validate() const;  // throws Error naming the bad field
};

class NgramProposer final : public Proposer {
 public:
  explicit NgramProposer(const NgramOptions& options);

  // Proposer: one-hot drafts, no state, no network.
  ProposerCapabilities capabilities() const override { return {}; }
  int32_t num_speculative_tokens() const override { return options_.num_speculative_tokens; }
  void propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) override;

  // tokens: [N] prompt + output so far. Returns a subspan of tokens, possibly empty.
  std::span<const int32_t> propose(std::span<const int32_t> tokens) const;

  const NgramOptions& options() const { return options_; }

 private:
  NgramOptions options_;
};

}  // namespace dspark
