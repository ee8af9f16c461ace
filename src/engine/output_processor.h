// OutputProcessor: turns the target's logits for a request that reached the end of its
// committed tokens into committed tokens and what the request's submitter is told. In
// order: for a constrained request (response_format json_object) the mask of every row for
// the output so far plus the drafts before it, the request's sampling transform of every
// row (penalties see the drafts before each position, as plain decoding would), the rejection sampler over its drafts
// (accepted drafts, then a recovered or bonus token), log-probabilities, and the finish
// conditions (EOS, a closed JSON object, max_tokens, context). Token ids only: text and
// stop strings are made beside the engine (engine/detokenizer.h).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/request.h"
#include "kernels/sampling.h"
#include "tokenizer/tokenizer.h"
#include "spec/rejection_sampler.h"

namespace dspark {

class OutputProcessor {
 public:
  // max_drafts: the most drafts a request verifies in one round.
  OutputProcessor(int64_t vocab_size, int64_t max_model_len, int32_t max_drafts, const Tokenizer& tokenizer);

  // What verification made of one round.
  struct Verdict {
    int32_t num_drafts = 0;    // drafts verified
    int32_t num_accepted = 0;  // of those, accepted
    // The probability that the first unverified draft (Request::unverified_draft) would
    // have survived, where the round tells: all verified drafts were accepted, so the
    // target's row for the next position is the one that draft would have been tested
    // against. Greedy and position-keyed requests: 1 or 0, whether it equals the emitted
    // token (the argmax, or the keyed draw, it would have had to match); other sampled
    // requests: min(1, p(x) / q(x)), the acceptance test's probability.
    std::optional<double> unverified_survival;
  };
  // logits: [request.drafts.size() + 1, vocab], the target's rows for the request's last
  // committed token and each draft. Commits the accepted drafts and the next token
  // (num_computed moves past the anchor and the accepted drafts), records the round in
  // the request's own metrics, and appends its output to `outputs` when there is news.
  Verdict commit(Request& request, const float* logits, std::vector<RequestOutput>& outputs);

  // prompt_logprobs: rows [num_rows, vocab] of the target's logits at prompt positions
  // first_position.. give the log-probs of the prompt tokens after them (log-softmax, no
  // sampling transform), kept in the request until its first output.
  void gather_prompt_logprobs(Request& request, const float* rows, int64_t first_position, int32_t num_rows);

  // Marks the request finished with `reason` and completes its final output. Frees
  // nothing: the scheduler releases finished requests.
  void finish(Request& request, FinishReason reason, RequestOutput& out);

 private:
  // The probability that the request's cut draft would have survived at draft position
  // `position` (Verdict::unverified_survival): p the target's distribution there under the
  // request's transform, emitted the token the round emitted there.
  double cut_draft_survival(const Request& request, const float* p, int32_t position, int32_t emitted) const;
  // Appends one token; returns true when the request finished.
  bool append_token(Request& request, int32_t token, RequestOutput& out);
  // min_tokens: the rows of `logits` ([num_rows, vocab]) whose token would leave the output
  // shorter than that, with EOS (unless ignored) and the stop tokens at -inf: masked_ (a
  // copy, or in place when logits already is masked_), or logits itself when no row is
  // short.
  const float* ban_early_stops(const Request& request, const float* logits, int32_t num_rows);
  // kEos for an EOS id (unless ignored), kStop for a stop token: the token ends the output
  // and is not part of it.
  std::optional<FinishReason> ends_output(const Request& request, int32_t token) const;
  // The log-probabilities reported for `token`, emitted from one row of the target:
  // logits [vocab] and probs [vocab] (p under the request's transform); history as for
  // that row's p. A greedy request's p is one-hot, so its report is the log-softmax of
  // the penalised logits instead.
  TokenLogprob token_logprob(const float* logits, const float* probs, int32_t token, const Request& request,
                             std::span<const int32_t> history);

  int64_t vocab_;
  int64_t max_model_len_;
  const Tokenizer& tokenizer_;
  LogitsProcessor logits_processor_;
  RejectionSampler rejection_sampler_;
  std::vector<float> probs_;          // [max_drafts + 1, vocab] target p of one request
  std::vector<int32_t> history_;      // committed + drafts, for the penalties
  std::vector<float> logprob_probs_;  // [vocab] a greedy request's untruncated p (logprobs)
  std::vector<float> masked_;         // [max_drafts + 1, vocab] a constrained or min_tokens request's logits, masked
};

}  // namespace dspark
