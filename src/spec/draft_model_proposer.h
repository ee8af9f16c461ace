// Draft-model proposer (the classic speculative decoding baseline, llama.cpp's
// --model-draft): a small autoregressive model with the target's tokenizer drafts up to K
// tokens per request, one batched forward per draft position over all requests.
//
// The draft model keeps its own paged KV cache. Per slot it remembers the tokens whose KV
// it holds; at each round it keeps the longest prefix of those that is still committed
// (rejected drafts drop out), feeds the rest (the new committed tokens — on a request's
// first round, its whole prompt, in chunks), then drafts. Drafts are sampled from the
// draft's distribution q under the request's own sampling transform (greedy requests
// draft greedily; seeded ones by Gumbel-max with the target's position-keyed noise, see
// draw_draft in spec/proposer.h), and q is returned for the verifier. A greedy request
// without penalties drafts the argmax of the draft's logits and gets no q (its
// verification compares tokens).
//
// Early stop (llama.cpp's --draft-p-min): a request stops drafting once the token it drew
// had draft probability below p_min (for greedy requests: the softmax probability of the
// argmax at temperature 1), since such drafts are rarely accepted.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/block_allocator.h"
#include "kernels/sampling.h"
#include "model/kv_pool.h"
#include "model/transformer.h"
#include "spec/proposer.h"

namespace dspark {

struct DraftModelOptions {
  int32_t num_speculative_tokens = 5;  // K: most drafts per round
  float p_min = 0.0f;                  // stop drafting below this draft probability (0 = never)
  int64_t max_running = 16;            // slots (the engine's max_running)
  int64_t block_size = 16;             // draft KV block size
  DType kv_dtype = DType::kF32;        // draft KV storage

  void validate() const;
};

class DraftModelProposer final : public Proposer {
 public:
  // The draft model's options must allow max_running sequences and at least
  // max_running tokens per forward.
  DraftModelProposer(std::unique_ptr<Transformer> draft_model, const DraftModelOptions& options);

  ProposerCapabilities capabilities() const override;
  int32_t num_speculative_tokens() const override { return options_.num_speculative_tokens; }
  // Feeds the draft model the committed tokens it has not seen, for the requests about to
  // draft (max_drafts > 0) only: a request the schedule does not draft for costs nothing
  // here, and its backlog is fed in one batched pass when it drafts again.
  void catch_up(std::span<const DraftRequest> requests) override;
  void propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) override;
  void release(int32_t slot) override;

  const Transformer& draft_model() const { return *model_; }
  // Tokens of the slot's sequence whose KV the draft cache holds.
  int64_t cached_tokens(int32_t slot) const;

 private:
  struct SlotState {
    BlockTable blocks;
    std::vector<int32_t> fed;     // tokens whose KV the draft cache holds, in order
    std::vector<int32_t> drafts;  // [<= K] this round's drafts
    std::vector<float> probs;     // [K, vocab] q of each draft
  };
  struct Active {
    int32_t request;              // index into the propose() arguments
    int32_t slot;
    bool drafting;                // still drafting this round
  };

  // Feeds every given request's unseen committed tokens but its last, in batched forwards.
  void feed_committed(std::span<const DraftRequest> requests);
  void draft_token(const DraftRequest& request, SlotState& state, const float* logits, bool& keep_drafting);

  std::unique_ptr<Transformer> model_;
  DraftModelOptions options_;
  KvPool kv_;
  BlockAllocator allocator_;
  LogitsProcessor logits_processor_;
  std::vector<SlotState> slots_;        // [max_running]
  std::vector<float> grammar_row_;      // [vocab] a grammar-bound request's logits row, masked
  std::vector<int32_t> history_;        // committed + drafts, for the repetition penalty
  // Per-forward buffers.
  std::vector<int32_t> batch_tokens_;
  std::vector<SequenceSlice> batch_slices_;
  std::vector<int32_t> batch_rows_;
  std::vector<Active> active_;
  std::vector<int32_t> row_owner_;      // [rows] index into active_
  std::vector<DraftRequest> drafting_;  // [<= max_running] requests that draft this round
  std::vector<size_t> cursor_;          // [<= max_running] next token to feed, per drafting request
};

}  // namespace dspark
