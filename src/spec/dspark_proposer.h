// DSparkProposer: the block drafter of DESIGN §4 (DSpark; DFlash is the same code with
// sample_from_anchor off and no Markov / confidence heads), loaded from a speculators-layout
// directory (spec/drafter_config.h, spec/drafter_tensors.h) and plugged into the engine as a
// Proposer that needs the target's hidden states and owns a paged KV cache.
//
// observe(): for each request's newly committed positions p (prompt chunks; the anchor and
//   accepted drafts of a verification round), ctx_p = RMSNorm_h(fc(concat(h_l1..h_lk)_p)),
//   and every draft layer's K/V of ctx_p (k_norm, RoPE at p) go to the slot's KV cache.
//   So after a round the cache holds exactly the committed context: rejected drafts never
//   reach it. The projection is deferred: observe() keeps the rows in the slot's pending
//   buffer and catch_up() (or propose()) projects them, batched over every drafting
//   request, when the request drafts again. A busy engine that drafts nothing then pays
//   nothing for the context of requests that finish before they draft. A full pending
//   buffer is projected at once. The result is bit-identical to projecting at once: every
//   row goes through the same batch-invariant kernels.
// propose(): one batched backbone pass over every drafting request. With n committed
//   tokens, the context is positions 0..n−2 (observed), the anchor x₀ = tokens[n−1] sits at
//   position n−1 and the γ−1 masks at n..n+γ−2 (DeepSpec: position ids = anchor position +
//   0..γ−1; the block sees context strictly before the anchor). Block K/V are written to
//   scratch slots n−1..n+γ−2 of the same cache (the next observe() overwrites them) and
//   every block query attends to all n−1+γ keys (non-causal inside the block). Final norm,
//   LM head → U. DSpark: slot j−1 gives U_j, j = 1..γ; DFlash: slot j gives U_j,
//   j = 1..γ−1. Then left to right per request: logits_j = U_j (+ Markov term of x_{j−1}),
//   q_j = the request's sampling transform of logits_j (LogitsProcessor::to_probs, the
//   repetition penalty seeing committed tokens + earlier drafts), x_j = draw_draft(q_j)
//   (spec/proposer.h: argmax for greedy requests, Gumbel-max with the target's
//   position-keyed noise for seeded ones, else drawn with the request's draft Rng);
//   c_j = sigmoid(z_j / T_j), with the temperatures calibrated for greedy or for sampling
//   requests (DrafterConfig::confidence_temperature).
//   Returns min(max_drafts, num_speculative_tokens) drafts with their q rows and c_j. A
//   greedy request without penalties takes the argmax of logits_j directly and gets no q
//   (drafts_argmax, spec/proposer.h).
//
// Draft vocabularies (spec/draft_vocab_head.h): the LM head and Markov W₂ run over the V_d
// tokens of the drafter's vocabulary (all V, or a reduced one, spec/draft_vocab.h), or for a
// greedy request over the V_g tokens of the drafter's greedy vocabulary when it has one; a
// reduced row is scattered into target ids (−∞ elsewhere) before the transform and the draw.
//
// The embedding table and LM head are the target's unless the drafter directory has its own
// embed_tokens.weight / lm_head.weight: the drafter holds the target's EmbeddingTable and a
// shared view of its LM head (Linear::shared_view), not copies, so they cost no memory and
// give the drafter exactly the target's values and kernel. Per-step work allocates nothing.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "kernels/linear.h"
#include "kernels/rope.h"
#include "kernels/sampling.h"
#include "model/block_allocator.h"
#include "loader/config.h"
#include "model/embedding_table.h"
#include "model/kv_pool.h"
#include "model/transformer.h"
#include "loader/safetensors.h"
#include "spec/draft_layer.h"
#include "spec/draft_vocab_head.h"
#include "spec/drafter_config.h"
#include "spec/dspark_heads.h"
#include "spec/proposer.h"
#include "spec/tail_match.h"

namespace dspark {

// The confidence of each repeat-lookup draft (tail matches of 8 or more tokens) before the
// engine has verified any: their survival replaying the eval sets' greedy rounds, 0.97-0.99
// per position pooled over the four sets (docs/results.md). The engine then learns each
// kind's own (Draft::confidence_source, spec/confidence_calibrator.h).
inline constexpr float kRepeatLookupConfidence = 0.98f;

struct DSparkProposerOptions {
  int32_t num_speculative_tokens = 0;  // drafts per round; 0 = the drafter's speculative_tokens
  int64_t max_running = 16;            // slots (the engine's max_running)
  int64_t max_model_len = 0;           // the target's context length (sizes KV and RoPE), > 0
  int64_t max_context_rows = 256;      // committed positions per projection pass (more are chunked)
  // Committed positions per slot whose projection may wait for the next draft; 0 projects
  // at once, -1 sizes it to about 64 MiB over all slots (at most max_model_len).
  int64_t max_pending_positions = -1;
  int64_t kv_block_size = 16;          // positions per drafter KV block
  // Context positions a block attends to: the last context_window before the anchor (0 =
  // all of them). Bounds the drafter's cost per draft and its KV memory on long prompts:
  // positions that fall out of the window are never projected, their KV blocks freed.
  int64_t context_window = 0;
  DType compute = DType::kBF16;        // matmul dtype: kBF16 or kF32
  WeightQuantization quantization = WeightQuantization::kNone;  // kInt8: matmul weights int8 (at load)
  DType kv_dtype = DType::kF32;        // drafter KV storage
  bool keep_base_logits = false;       // keep U_j for inspect() (tests, diagnostics)
  // A greedy request whose context tail occurred earlier with at least this many tokens
  // matched (spec/tail_match.h, up to kRepeatMaxTail) gets the repeat continuation as its
  // drafts, one-hot, with confidence kRepeatLookupConfidence, and no drafter pass: greedy
  // text that loops keeps looping, and the lookup continues a loop exactly where the drafter
  // often breaks it. 0 = never.
  int32_t repeat_lookup_min_match = 0;
  // Greedy requests draft from the drafter's greedy draft vocabulary when it has one
  // (DrafterConfig::greedy_draft_vocab_size); false: from its whole vocabulary.
  bool greedy_draft_vocab = true;

  void validate() const;
};

class DSparkProposer final : public Proposer {
 public:
  // target: the model the drafter serves (its config, embedding table and LM head, shared;
  // it need not outlive the proposer). Checks the drafter against the target and every
  // tensor's shape.
  DSparkProposer(DrafterConfig config, const WeightStore& drafter_weights, const Transformer& target,
                 const DSparkProposerOptions& options);
  // Loads the target from target_dir only for its shared tensors (tests, tools); an engine
  // builds the proposer over the target it runs (engine/assembly.h).
  static std::unique_ptr<DSparkProposer> load(const std::filesystem::path& drafter_dir,
                                              const std::filesystem::path& target_dir,
                                              const DSparkProposerOptions& options);
  ~DSparkProposer() override;

  ProposerCapabilities capabilities() const override;
  int32_t num_speculative_tokens() const override { return num_speculative_tokens_; }
  void propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) override;
  void release(int32_t slot) override;
  std::vector<int32_t> target_layers() const override { return config_.capture_layers(); }
  void observe(std::span<const CommittedHiddenStates> committed) override;
  void catch_up(std::span<const DraftRequest> requests) override;

  const DrafterConfig& config() const { return config_; }
  // What it drafts with: the target's embedding table and (a view of) its LM head unless
  // the drafter directory has its own.
  const EmbeddingTable& embedding() const { return *embedding_; }
  const Linear& lm_head() const { return vocab_head_.lm_head(); }
  // Bytes of weights one propose() for sampled requests streams (layers, fc, LM head, Markov
  // W₂ and a contextual head's MLP); greedy requests stream the greedy vocabulary's smaller head instead, when there is one.
  size_t weight_bytes() const;
  // Drafter KV blocks held by all slots (bounded by the context window when one is set).
  int64_t kv_blocks_in_use() const { return allocator_.num_used(); }

  // What the last propose() computed for requests[i] (empty spans if it did not draft).
  struct Inspection {
    std::span<const float> hidden;             // [block_size, hidden] final-norm block states
    std::span<const float> base_logits;        // [L, V_h] U_j in the request's head's draft ids
                                               // (with keep_base_logits)
    std::span<const float> logits;             // [L, vocab] U_j + Markov term in target ids (−∞ outside
                                               // a reduced draft vocabulary), untransformed
    std::span<const float> confidence_logits;  // [L] z_j before the temperature (if any)
  };
  Inspection inspect(size_t request) const;

  // propose()'s three stages: "backbone" (the drafter layers over every drafting block),
  // "heads" (the LM heads over the rows that draft), "sequential" (position by position:
  // Markov term, transform, draw, confidence).
  std::vector<ProposerStage> stage_seconds() const override;

 private:
  struct SlotState {
    BlockTable blocks;
    int32_t num_observed = 0;             // committed positions seen (projected or pending)
    int32_t num_pending = 0;              // the last of them, not yet projected
    float* pending = nullptr;             // [max_pending, k * target hidden] their concat(h_l1 .. h_lk)
    std::vector<int32_t> drafts;          // [<= num_drafts]
    std::vector<float> probs;             // [num_drafts, vocab] q
    std::vector<float> confidence;        // [num_drafts] c_j
    std::vector<float> confidence_logits; // [num_drafts] z_j
    TailMatch repeat;                     // this round's context tail found earlier (greedy requests)
    bool repeat_agrees = false;           // drafts so far all equal the repeat continuation
  };
  struct Active {
    int32_t request;     // index into propose()'s arguments
    int32_t slot;
    int32_t num_drafts;  // L (lowered where a grammar allows none of the drafter's tokens)
    int32_t first_row;   // first block row (rows first_row .. + block_size)
    int32_t logit_row;   // first LM-head row of its head (drafts 1..L)
    DraftVocabHead* head;  // the vocabulary it drafts from
  };

  // Row j of a's logits over the target vocabulary with the tokens r's grammar refuses after
  // the drafts so far at −∞ (grammar_row_), or null when no token it allows is left.
  const float* grammar_bound_row(const Active& a, const DraftRequest& r, int32_t j);

  // The projection batch: rows staged in ctx_in_ (positions and KV slots beside them).
  // stage_pending appends the slot's pending rows and empties its buffer; make_room
  // projects a full batch. Both return the new number of staged rows.
  int64_t stage_pending(SlotState& s, int64_t rows);
  // Finds s.repeat for a greedy request when repeat lookup or repeat shifts need it, and
  // fills s.drafts (and s.confidence) with the repeat continuation when the match is long
  // enough for lookup (DSparkProposerOptions::repeat_lookup_min_match); false otherwise.
  bool draft_by_repeat_lookup(const DraftRequest& r, SlotState& s);
  int64_t make_room(int64_t rows);
  void project_context(int64_t rows);
  void run_backbone(int64_t rows);
  void draft_sequentially(std::span<const DraftRequest> requests);

  // The first context position a slot with `num_observed` positions will ever attend to.
  int32_t first_visible(int32_t num_observed) const;

  DrafterConfig config_;
  DSparkProposerOptions options_;
  int32_t num_speculative_tokens_;
  int64_t block_;                     // γ
  int64_t hidden_;                    // drafter hidden size
  int64_t vocab_;                     // V, the target's
  int64_t fc_in_;                     // k * target hidden
  int64_t max_block_rows_;            // max_running * γ
  std::shared_ptr<const EmbeddingTable> embedding_;  // [vocab, hidden], the target's unless the drafter has one
  Linear fc_;                         // [hidden, k * target hidden]
  std::vector<float> hidden_norm_;    // [hidden]
  std::vector<float> final_norm_;     // [hidden]
  std::vector<DraftLayer> layers_;
  DraftVocabHead vocab_head_;         // LM head [V_d, hidden] (+ W₂), every request's unless below
  std::unique_ptr<DraftVocabHead> greedy_head_;  // [V_g, hidden] (+ W₂) for greedy requests, or null
  DSparkHeads heads_;                 // W₁ and the confidence head
  RopeTable rope_;
  KvPool kv_;
  BlockAllocator allocator_;
  LogitsProcessor logits_processor_;
  DraftLayerWorkspace workspace_;
  std::vector<SlotState> slots_;      // [max_running]
  int64_t max_pending_;               // pending positions per slot
  std::unique_ptr<float[]> pending_;  // [max_running, max_pending, k * target hidden], left uninitialised
                                      // so that untouched pages cost no memory

  // Context projection buffers.
  std::vector<float> ctx_in_;         // [max_context_rows, k * target hidden]
  std::vector<float> ctx_;            // [max_context_rows, hidden]
  std::vector<int32_t> ctx_positions_;  // [max_context_rows]
  std::vector<int64_t> ctx_slots_;      // [max_context_rows]
  // Block pass buffers.
  std::vector<float> x_;              // [max_block_rows, hidden] residual, then final-norm states
  std::vector<int32_t> positions_;    // [max_block_rows]
  std::vector<int32_t> seq_of_row_;   // [max_block_rows]
  std::vector<int32_t> num_keys_;     // [max_block_rows]
  std::vector<int64_t> row_slots_;    // [max_block_rows]
  std::vector<const int32_t*> block_tables_;  // [max_running]
  std::vector<float> lm_in_;          // [max_block_rows, hidden]
  std::vector<Active> active_;        // [max_running]
  std::array<double, 3> stage_seconds_{};  // seconds in propose()'s stages (stage_seconds())
  std::vector<int32_t> active_of_request_;  // [max_running] index into active_, or -1
  std::vector<int32_t> markov_prev_;  // [max_running]
  std::vector<float*> markov_rows_;   // [max_running] logits rows the Markov term goes to
  std::vector<int32_t> markov_state_rows_;  // [max_running] their logit rows (contextual head's W_h·h_j)
  std::vector<float> markov_in_;      // [max_running, markov_rank] their Markov features f_j
  std::vector<int32_t> history_;      // committed + drafts, for the repetition penalty
  std::vector<float> grammar_row_;    // [vocab] a grammar-bound request's logits row, masked
};

}  // namespace dspark
