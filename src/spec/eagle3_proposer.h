// Eagle3Proposer: the EAGLE-3 drafter (spec/eagle3_config.h has the math and the formats) as
// a Proposer: one decoder layer over [embedding ; features], drafting K tokens one after the
// other, batched over requests, over a reduced draft vocabulary mapped to the target's by d2t.
//
// observe(): for every newly committed position p of a request, a context row pairs the
//   target's fused features g_p = fc(concat(h_l1, h_l2, h_l3)_p) with the next token t_{p+1}
//   (CommittedHiddenStates::tokens) at position p. A row's K/V depend on the row alone, so
//   one batched q/k/v projection over all new rows writes them to the slot's paged cache;
//   the last row's g waits in the slot, and catch_up() (or propose()) runs the whole layer
//   over it, batched over the requests about to draft, for its output r. A round's rows
//   overwrite the scratch K/V its drafts left, so the cache holds exactly the committed
//   context computed from the target's features.
//   The projection is deferred, as DSpark's is: observe() keeps the rows' target features
//   in the slot's pending buffer, and catch_up() (or propose()) projects them, batched over
//   every request about to draft. A busy engine that drafts nothing then pays nothing for
//   the context of requests that finish before they draft again. A full pending buffer is
//   projected at once. The result is bit-identical to projecting at once: every row goes
//   through the same batch-invariant kernels.
// propose(): with n committed tokens the last context row (position n−2, token t_{n−1}) is
//   the first draft's: logits = lm_head(norm(r)). Draft j+1 comes from a row at position
//   n−2+j with x = draft j and g = the previous row's r, one batched layer pass per draft
//   position for all requests still drafting, its K/V in scratch slots after the context.
//   Each draft: the draft-vocabulary logits scattered to the target vocabulary (−inf
//   elsewhere), the request's sampling transform (penalties see committed tokens + earlier
//   drafts) gives q, and draw_draft picks the token. A greedy request without penalties
//   takes the argmax of the draft-vocabulary logits directly and gets no q (drafts_argmax).
//   No confidence head: the prefix scheduler uses online acceptance, as for the draft LM.
//
// The embedding table is the target's unless the directory has embed_tokens.weight; the
// LM head is the drafter's own (draft vocabulary rows). Per-step work allocates nothing.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "kernels/linear.h"
#include "kernels/rope.h"
#include "kernels/sampling.h"
#include "loader/safetensors.h"
#include "model/block_allocator.h"
#include "model/decoder_layer.h"
#include "model/embedding_table.h"
#include "model/kv_pool.h"
#include "model/transformer.h"
#include "spec/eagle3_config.h"
#include "spec/proposer.h"

namespace dspark {

struct Eagle3ProposerOptions {
  int32_t num_speculative_tokens = 0;  // drafts per round; 0 = the config's speculative_tokens
  int64_t max_running = 16;            // slots (the engine's max_running)
  int64_t max_model_len = 0;           // the target's context length (sizes KV and RoPE), > 0
  int64_t max_context_rows = 256;      // context rows per layer pass (more are chunked)
  // Committed positions per slot whose projection may wait for the next draft; 0 projects
  // at once, -1 sizes it to about 64 MiB over all slots (at most max_model_len).
  int64_t max_pending_positions = -1;
  int64_t kv_block_size = 16;          // positions per drafter KV block
  // Keys a row attends to, counted back from its own position (0 = all): bounds the cost
  // per draft and the KV memory on long prompts; positions before it are freed.
  int64_t context_window = 0;
  DType compute = DType::kBF16;        // matmul dtype: kBF16 or kF32
  WeightQuantization quantization = WeightQuantization::kNone;
  DType kv_dtype = DType::kF32;

  void validate() const;
};

class Eagle3Proposer final : public Proposer {
 public:
  // target: the model the drafter serves (its config and embedding table, shared; it need
  // not outlive the proposer). Checks the config against the target and every tensor's
  // shape and dtype, and that d2t (and t2d, when present) map into the target vocabulary.
  Eagle3Proposer(Eagle3Config config, const WeightStore& weights, const Transformer& target,
                 const Eagle3ProposerOptions& options);
  // Loads the target from target_dir only for its embedding (tests, tools).
  static std::unique_ptr<Eagle3Proposer> load(const std::filesystem::path& drafter_dir,
                                              const std::filesystem::path& target_dir,
                                              const Eagle3ProposerOptions& options);
  ~Eagle3Proposer() override;

  ProposerCapabilities capabilities() const override;
  int32_t num_speculative_tokens() const override { return num_speculative_tokens_; }
  void propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) override;
  void release(int32_t slot) override;
  std::vector<int32_t> target_layers() const override { return capture_layers_; }
  void observe(std::span<const CommittedHiddenStates> committed) override;
  void catch_up(std::span<const DraftRequest> requests) override;

  const Eagle3Config& config() const { return config_; }
  // Target id of each draft-vocabulary id: d + d2t[d]. [draft_vocab]
  std::span<const int32_t> draft_to_target() const { return draft_to_target_; }
  // Bytes of weights one propose() streams per draft position (layer, LM head; fc per context row).
  size_t weight_bytes() const;
  int64_t kv_blocks_in_use() const { return allocator_.num_used(); }
  // The draft-vocabulary logits of the last propose()'s draft j of requests[i] (empty if
  // it did not draft that far): for parity tests.
  std::span<const float> draft_logits(size_t request, int32_t j) const;

 private:
  struct SlotState {
    BlockTable blocks;
    int32_t num_observed = 0;        // committed positions seen (written or pending)
    int32_t num_pending = 0;         // the last of them, whose rows are not written yet
    float* pending = nullptr;        // [max_pending, 3 * target hidden] their concat(h_l1, h_l2, h_l3)
    // [hidden] r of the row at position num_observed − 1, or its features g while tail_waits
    std::vector<float> last_output;
    bool tail_waits = false;         // that row's layer pass waits for catch_up()
    int32_t tail_token = 0;          // its token t_{num_observed}
    std::vector<int32_t> drafts;     // [<= K]
    std::vector<float> probs;        // [K, vocab] q
    std::vector<float> logits;       // [K, draft_vocab] the drafter's own logits
  };
  struct Active {
    int32_t request;     // index into propose()'s arguments
    int32_t slot;
    int32_t num_drafts;  // L
    int32_t context;     // n − 1: context rows, the first draft row's position + 1
  };

  // Row `row` of the pass being built: its token, position and KV slot (its features are
  // staged in features_ or x_ by the caller).
  void stage_row(int64_t row, int32_t token, int32_t position, const BlockTable& blocks);
  // Appends the slot's pending rows to the context pass being staged (row p's token is
  // tokens[p + 1]), the slot's last one as its tail, and empties its buffer. Writes a full
  // pass on the way; returns the new number of staged rows.
  int64_t stage_pending(int32_t slot, std::span<const int32_t> tokens, int64_t rows);
  // Marks staged row `row` as the slot's last row (its g waits for catch_up()).
  void set_tail(int32_t slot, int64_t row, int32_t token);
  // concat(h_l1, h_l2, h_l3) of row i of c -> dst [3 * target hidden].
  void copy_features(const CommittedHiddenStates& c, int32_t i, float* dst) const;
  // normed_ = [RMSNorm_in(embed(token)) ; RMSNorm_hidden(x_)] per row; x_ becomes the
  // residual (the normed features with norm_before_residual).
  void norm_inputs(int64_t rows);
  // Context rows: fc (the slots' last rows keep their g), norms, and their K/V only.
  void write_context(int64_t rows);
  // The whole layer over `rows` rows whose features g are in x_: x_ becomes their outputs r.
  void run_layer(int64_t rows);
  // lm_head(norm(lm_in_)) of `rows` outputs -> logits_ [rows, draft_vocab] (lm_in_ is normed in place).
  void run_head(int64_t rows);
  // Draft-vocabulary logits -> q over the target vocabulary under the request's transform,
  // and the drawn draft (appended to s.drafts); -1, nothing drawn, where r's grammar allows
  // none of the drafter's tokens.
  int32_t draw(const DraftRequest& r, SlotState& s, const float* logits);
  // The first key a row at position `end` − 1 attends to (and any row after it).
  int32_t first_visible(int32_t end) const;

  Eagle3Config config_;
  Eagle3ProposerOptions options_;
  std::vector<int32_t> capture_layers_;
  int32_t num_speculative_tokens_;
  int64_t hidden_;
  int64_t vocab_;                     // target vocabulary
  int64_t draft_vocab_;
  int64_t fc_in_;                     // 3 * target hidden
  int64_t max_rows_;                  // rows of one pass
  std::shared_ptr<const EmbeddingTable> embedding_;  // [vocab, hidden]
  Linear fc_;                         // [hidden, 3 * target hidden]
  std::vector<float> hidden_norm_;    // [hidden]
  std::vector<float> final_norm_;     // [hidden]
  DecoderLayer layer_;                // q/k/v over [embedding ; hidden]
  Linear lm_head_;                    // [draft_vocab, hidden]
  std::vector<int32_t> draft_to_target_;  // [draft_vocab]
  bool to_target_ascending_;              // draft_to_target_ increases (greedy_draft_token)
  RopeTable rope_;
  KvPool kv_;
  BlockAllocator allocator_;
  LogitsProcessor logits_processor_;
  LayerWorkspace workspace_;
  std::vector<SlotState> slots_;      // [max_running]
  int64_t max_pending_;               // pending positions per slot
  std::unique_ptr<float[]> pending_;  // [max_running, max_pending, 3 * target hidden], left
                                      // uninitialised so that untouched pages cost no memory

  std::vector<float> features_;       // [max_context_rows, 3 * target hidden] fc input
  std::vector<float> x_;              // [max_rows, hidden] g, then the residual stream, then r
  std::vector<float> normed_;         // [max_rows, 2 * hidden] [RMSNorm_in(embed(x)) ; RMSNorm_hidden(g)]
  std::vector<int32_t> tokens_;       // [max_rows]
  std::vector<int32_t> positions_;    // [max_rows]
  std::vector<int32_t> seq_of_row_;   // [max_rows]
  std::vector<int32_t> num_keys_;     // [max_rows]
  std::vector<int64_t> row_slots_;    // [max_rows]
  std::vector<const int32_t*> block_tables_;  // [max_rows] one per row (each row its own sequence)
  std::vector<int32_t> row_slot_index_;  // [max_rows] the slot (observe) or chain (propose) of a row
  std::vector<float> chain_;          // [max_running, hidden] each drafting chain's latest output r
  std::vector<float> lm_in_;          // [max_running, hidden]
  std::vector<float> logits_;         // [max_running, draft_vocab]
  std::vector<float> target_logits_;  // [vocab] one draft's logits over the target vocabulary
  std::vector<Active> active_;        // [max_running]
  std::vector<int32_t> active_of_request_;  // [max_running] index into active_, or -1
  struct Tail {
    int32_t row;   // row of the context pass being staged
    int32_t slot;
  };
  std::vector<Tail> tails_;           // [max_running] last rows in the pass being staged
  int32_t num_tails_ = 0;
  std::vector<int32_t> history_;      // committed + drafts, for penalties
};

}  // namespace dspark
