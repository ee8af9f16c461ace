#include "engine/model_runner.h"

namespace dspark {

ModelRunner::ModelRunner(Transformer& model, const KvPoolOptions& kv, int64_t max_batch_tokens, int64_t max_running,
                         bool keep_captured_states)
    : model_(model), kv_(model.config(), kv) {
  if (keep_captured_states) {
    captured_states_ = std::make_unique<CapturedStates>(kv_.num_blocks(), kv_.block_size(),
                                                        static_cast<int64_t>(model.options().capture_layers.size()),
                                                        model.config().hidden_size);
  }
  tokens_.reserve(max_batch_tokens);
  slices_.reserve(max_running);
  logit_rows_.reserve(max_batch_tokens);
  first_rows_.reserve(max_running);
  logit_offsets_.reserve(max_running);
  prompt_rows_.reserve(max_running);
}

const ForwardResult& ModelRunner::execute(std::span<const ScheduledRequest> scheduled) {
  tokens_.clear();
  slices_.clear();
  logit_rows_.clear();
  first_rows_.clear();
  logit_offsets_.clear();
  prompt_rows_.clear();
  const int64_t vocab = model_.config().vocab_size;
  for (const ScheduledRequest& s : scheduled) {
    const Request& r = *s.request;
    const int32_t first = static_cast<int32_t>(tokens_.size());
    first_rows_.push_back(first);
    tokens_.insert(tokens_.end(), r.tokens.begin() + r.num_computed, r.tokens.begin() + r.num_computed + s.num_real);
    tokens_.insert(tokens_.end(), r.drafts.begin(), r.drafts.begin() + s.num_drafts);
    slices_.push_back({s.num_real + s.num_drafts, static_cast<int32_t>(r.num_computed), r.blocks.data()});
    // prompt_logprobs: the fed prompt positions whose next prompt token still wants its
    // log-prob (a preempted request recomputes positions it has already reported).
    PromptRows& prompt = prompt_rows_.emplace_back();
    if (r.needs_prompt_logits()) {
      prompt.offset = static_cast<int64_t>(logit_rows_.size()) * vocab;
      prompt.first_position = std::max(r.num_computed, r.num_prompt_logprobs);
      const int64_t end = std::min(r.num_computed + s.num_real, r.num_prompt_tokens - 1);
      for (int64_t p = prompt.first_position; p < end; ++p) {
        logit_rows_.push_back(first + static_cast<int32_t>(p - r.num_computed));
        ++prompt.num_rows;
      }
    }
    if (r.num_computed + s.num_real == static_cast<int64_t>(r.tokens.size())) {
      // Reaches the end of the committed tokens: logits for the last one and every draft.
      logit_offsets_.push_back(static_cast<int64_t>(logit_rows_.size()) * vocab);
      for (int32_t j = 0; j <= s.num_drafts; ++j) logit_rows_.push_back(first + s.num_real - 1 + j);
    } else {
      logit_offsets_.push_back(-1);
    }
  }
  result_ = model_.forward(ForwardBatch{tokens_, slices_, logit_rows_}, kv_);
  if (captured_states_) {
    // Every fed row, drafts too: rejected ones lie beyond num_computed, where they are
    // overwritten before any block holding them is cached (as for the K/V).
    for (size_t i = 0; i < scheduled.size(); ++i) {
      const ScheduledRequest& s = scheduled[i];
      captured_states_->store(s.request->blocks, s.request->num_computed, s.num_real + s.num_drafts, hidden(i),
                              result_.hidden_stride);
    }
  }
  return result_;
}

ModelRunner::PromptLogits ModelRunner::prompt_logits(size_t i) const {
  const PromptRows& p = prompt_rows_[i];
  if (p.num_rows == 0) return {};
  return {result_.logits + p.offset, p.first_position, p.num_rows};
}

const float* ModelRunner::hidden(size_t i) const {
  return result_.hidden_layer(0) + static_cast<int64_t>(first_rows_[i]) * model_.config().hidden_size;
}

}  // namespace dspark
