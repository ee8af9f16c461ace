// Proposer: the interface every speculative method plugs into (n-gram, draft model,
// DFlash, DSpark). Once per engine step, before scheduling, the engine asks the proposer
// for drafts for all decoding requests in one call, so methods that run a network batch
// them into one pass.
//
// Proposers declare what they need and provide (capabilities) instead of being switched
// on by name: the engine captures target hidden states only for a proposer that needs
// them, frees per-request state only for one that keeps it, and verifies one-hot drafts
// when no draft probabilities are provided.
//
// Per-request state lives in a slot (0 .. max_running - 1) the engine assigns when it
// admits a request and hands back through release(slot) when the request ends, so a
// proposer keeps flat arrays, not maps.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "core/check.h"
#include "core/rng.h"
#include "core/token_grammar.h"
#include "kernels/sampling.h"

namespace dspark {

// How a proposer's propose() time grows with the drafts asked of it: a block drafter
// drafts every position in one pass (per step); an autoregressive one runs a pass per draft.
enum class DrafterCostShape { kPerStep, kPerDraft };

struct ProposerCapabilities {
  bool needs_target_hidden_states = false;  // consumes the target's captured layer outputs
  bool owns_kv_cache = false;               // keeps per-request KV (must see release())
  bool provides_draft_probs = false;        // q for the verifier; else one-hot drafts
  bool provides_confidence = false;         // per-position acceptance estimates c_j
  DrafterCostShape drafter_cost = DrafterCostShape::kPerStep;  // what the adaptive budget measures
};

// Target hidden states of one request's newly committed positions, handed to proposers
// that need them (capabilities().needs_target_hidden_states) after every target forward:
// prompt chunks as they are prefilled, and in a verification round the anchor plus the
// accepted drafts. Rejected drafts' states are never shown. Positions arrive in order and
// without gaps; after release(slot) a slot starts again from position 0.
struct CommittedHiddenStates {
  int32_t slot = 0;
  int32_t start_position = 0;   // sequence position of the first row
  int32_t num_positions = 0;    // rows
  const float* hidden = nullptr;  // capture c, row i: hidden + c * layer_stride + i * hidden_size
  int64_t layer_stride = 0;     // floats between two captured layers
  int64_t hidden_size = 0;
  // The request's tokens known now (prompt + committed output; valid during observe()).
  // The engine commits a round's tokens before it shows their states, so the token after
  // every shown position is here: tokens.size() > start_position + num_positions. A drafter
  // that pairs a position's state with the next token (EAGLE-3) relies on it.
  std::span<const int32_t> tokens;
};

// Where a draft's confidences come from. Repeat lookup (DSparkProposerOptions::
// repeat_lookup_min_match) drafts the continuation of an earlier occurrence of the tail; how
// often that survives depends on the match: whether the tail matched the longest length
// looked for (kRepeatMaxTail), and whether the continuation runs past the text's end and
// wraps (a loop shorter than the drafts) or is text read once.
enum class ConfidenceSource : uint8_t {
  kHead,                     // the drafter's confidence head
  kLookup,                   // repeat lookup, shorter tail, continuation read once
  kLookupWrapping,           // shorter tail, continuation wraps
  kLookupFullTail,           // full-length tail, read once
  kLookupFullTailWrapping,   // full-length tail, wraps
};
inline constexpr int kNumConfidenceSources = 5;

// What a proposer sees of one request this step.
struct DraftRequest {
  int32_t slot = 0;                         // stable per-request index
  std::span<const int32_t> tokens;          // committed tokens: prompt + output so far
  const SamplingParams* sampling = nullptr; // the request's transform (q must use it too)
  Rng* rng = nullptr;                       // the drafter's own random stream for this request
  int32_t max_drafts = 0;                   // propose at most this many (may be 0)
  int64_t num_prompt_tokens = 0;            // tokens[0, num_prompt_tokens) is the prompt
  // The grammar the request's output follows, or null. A drafter that reads it draws each
  // draft among the tokens it allows (and stops where it allows none of the drafter's);
  // others may ignore it: the engine cuts drafts at the first the grammar refuses.
  TokenGrammar* grammar = nullptr;
};

// A grammar-bound request's draft row: `row` [vocab] (the drafter's logits over the target
// vocabulary) into out [vocab] (which may be row) with the tokens r.grammar refuses after
// `drafts` at −∞. False when it refuses them all: the request's drafting stops there. A
// drafter that picks its draft from out picks among the allowed tokens (greedy: the best of
// them; sampled: q with the refused ones taken out, still the distribution drawn from).
inline bool grammar_bound_row(const DraftRequest& r, std::span<const int32_t> drafts, const float* row, float* out,
                              int64_t vocab) {
  const std::span<const uint64_t> allowed = r.grammar->allowed_tokens(drafts);
  DSPARK_CHECK(static_cast<int64_t>(allowed.size()) >= token_mask_words(vocab),
               "a grammar's mask covers {} tokens, the drafter's row {}", allowed.size() * 64, vocab);
  if (out != row) std::copy_n(row, vocab, out);
  apply_token_mask(allowed, out, vocab);
  return std::any_of(out, out + vocab, [](float x) { return x != -std::numeric_limits<float>::infinity(); });
}

// What it returns for that request; views into proposer-owned memory, valid until the
// next propose() call.
struct Draft {
  std::span<const int32_t> tokens;          // [L], L <= max_drafts
  const float* probs = nullptr;             // [L, vocab] q, or null for one-hot drafts
  const float* confidence = nullptr;        // [L] c_j, or null
  // What `confidence` estimates: the engine corrects each source by what verification
  // taught about that source alone (spec/confidence_calibrator.h).
  ConfidenceSource confidence_source = ConfidenceSource::kHead;
};

// How a drafter picks its draft at sequence position `position` (tokens.size() + j for
// draft j) from its q [vocab] under the request's transform: argmax for greedy requests;
// for position-keyed ones Gumbel-max with the target's noise at that position (so the
// draft equals the token verification emits whenever q's and p's draws agree; see
// spec/rejection_sampler.h); else an inverse-CDF draw from the drafter's own stream.
inline int32_t draw_draft(const float* q, int64_t vocab, const SamplingParams& sp, int64_t position, Rng* rng) {
  if (sp.greedy()) return argmax(q, vocab);
  if (sp.position_keyed) return sample_gumbel_max(q, vocab, sp.seed, position);
  return sample_from_probs(q, vocab, rng->uniform());
}

// Greedy requests without penalties or a logit bias draft the argmax of the drafter's
// logits, read straight from its draft-vocabulary row (greedy_draft_token,
// spec/draft_vocab.h): their q would be one-hot, and greedy verification never reads q, so
// none is built (a null Draft::probs). In the DSpark drafter the scatter to the target
// vocabulary, the one-hot q and the draw took 4.9 of a greedy draft position's 11 us;
// without them its sequential stage per round fell from 34-36 to 19-22 us (Zen 5,
// docs/results/zen5/session-step-anatomy/).
inline bool drafts_argmax(const SamplingParams& sp) { return sp.greedy() && !sp.shifts_logits(); }

// The next draft of request r after `drafts` (its drafts so far), from the drafter's logits
// [vocab]: q = r's transform of them (into q [vocab]; its penalties see the committed tokens
// and `drafts`, gathered into the `history` scratch only when the transform reads them),
// then draw_draft from q.
inline int32_t transform_and_draw(LogitsProcessor& processor, const float* logits, float* q, int64_t vocab,
                                  const DraftRequest& r, std::span<const int32_t> drafts,
                                  std::vector<int32_t>& history) {
  const SamplingParams& sp = *r.sampling;
  std::span<const int32_t> seen;
  if (sp.uses_history()) {
    history.assign(r.tokens.begin(), r.tokens.end());
    history.insert(history.end(), drafts.begin(), drafts.end());
    seen = history;
  }
  processor.to_probs(logits, q, sp, seen, r.num_prompt_tokens);
  return draw_draft(q, vocab, sp, static_cast<int64_t>(r.tokens.size() + drafts.size()), r.rng);
}

// Seconds a proposer's propose() calls have spent in one of its stages, summed since it
// was built (for measurement: dspark eval). name is a static string.
struct ProposerStage {
  const char* name;
  double seconds;
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  virtual ProposerCapabilities capabilities() const = 0;
  // The most drafts this proposer produces per round (num_speculative_tokens).
  virtual int32_t num_speculative_tokens() const = 0;
  // drafts.size() == requests.size().
  virtual void propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) = 0;
  // The request in this slot ended (finished, cancelled, failed or preempted).
  virtual void release(int32_t slot) {}
  // Target layers (decoder-layer indices, output of layer l) whose hidden states this
  // proposer consumes; the target must be loaded with exactly these capture_layers.
  virtual std::vector<int32_t> target_layers() const { return {}; }
  // Newly committed positions' hidden states (only for needs_target_hidden_states). A
  // proposer may keep them and defer its work on them until the request drafts again.
  virtual void observe(std::span<const CommittedHiddenStates> committed) {}
  // Finish the deferred observe() work of the requests about to draft. requests holds
  // every decoding request; those with max_drafts == 0 are not drafting this step and get
  // no work (the adaptive schedule may give a request no drafts for many steps, and work
  // for it then is wasted). propose() does it too; the engine calls this first so that
  // the time counts as context work, not drafting.
  virtual void catch_up(std::span<const DraftRequest> requests) {}
  // The stages of propose() and the time spent in each so far, in the order they run
  // (empty for a proposer that does not break its work down).
  virtual std::vector<ProposerStage> stage_seconds() const { return {}; }
};

}  // namespace dspark
