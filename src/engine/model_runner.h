// ModelRunner: runs the target over one step. It lays the scheduled requests' fed tokens
// back to back in one flat batch (token-flattened: prefill chunks, anchors and drafts
// alike), asks for logits only where a request reaches the end of its committed tokens
// (its last token and every draft), and keeps the captured hidden states of every fed
// row beside the KV blocks when a hidden-state proposer runs with prefix caching
// (engine/captured_states.h). It owns the KV cache memory; which blocks belong to whom is
// the scheduler's.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/captured_states.h"
#include "engine/scheduler.h"
#include "model/kv_pool.h"
#include "model/transformer.h"

namespace dspark {

class ModelRunner {
 public:
  // keep_captured_states: store the target's captured layers per KV block.
  ModelRunner(Transformer& model, const KvPoolOptions& kv, int64_t max_batch_tokens, int64_t max_running,
              bool keep_captured_states);

  // Runs the target over the step; every scheduled request's num_computed is still the
  // count before it. The result is valid until the next call.
  const ForwardResult& execute(std::span<const ScheduledRequest> scheduled);

  // Of the last execute(): the flat-batch row of scheduled[i]'s first fed token, and its
  // logits [num_drafts + 1, vocab] (null when it did not reach the end of its tokens).
  int32_t first_row(size_t i) const { return first_rows_[i]; }
  const float* logits(size_t i) const { return logit_offsets_[i] < 0 ? nullptr : result_.logits + logit_offsets_[i]; }
  // Of the last execute(): scheduled[i]'s logits at the prompt positions it fed that its
  // prompt_logprobs still needed (Request::needs_prompt_logits), rows [num_rows, vocab] for
  // positions first_position, first_position + 1, ...; num_rows 0 when none.
  struct PromptLogits {
    const float* rows = nullptr;
    int64_t first_position = 0;
    int32_t num_rows = 0;
  };
  PromptLogits prompt_logits(size_t i) const;
  // scheduled[i]'s fed rows of captured layer c start here (row j at + j * hidden_size).
  const float* hidden(size_t i) const;

  const ForwardResult& result() const { return result_; }
  const KvPool& kv() const { return kv_; }
  const CapturedStates* captured_states() const { return captured_states_.get(); }

 private:
  Transformer& model_;
  KvPool kv_;
  std::unique_ptr<CapturedStates> captured_states_;  // null unless kept
  ForwardResult result_;
  std::vector<int32_t> tokens_;        // [max_batch_tokens] the flat batch
  std::vector<SequenceSlice> slices_;  // [max_running]
  std::vector<int32_t> logit_rows_;    // [max_batch_tokens]
  std::vector<int32_t> first_rows_;    // [max_running]
  std::vector<int64_t> logit_offsets_; // [max_running] float offset into the logits, or -1
  struct PromptRows {
    int64_t offset = 0;          // float offset into the logits
    int64_t first_position = 0;
    int32_t num_rows = 0;
  };
  std::vector<PromptRows> prompt_rows_;  // [max_running]
};

}  // namespace dspark
