#include "spec/draft_model_proposer.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "spec/draft_vocab.h"

namespace dspark {
namespace {

KvPoolOptions draft_kv_options(const DraftModelOptions& o, int64_t max_model_len) {
  KvPoolOptions kv;
  kv.block_size = o.block_size;
  kv.num_blocks = o.max_running * ((max_model_len + o.num_speculative_tokens + o.block_size - 1) / o.block_size + 1);
  kv.dtype = o.kv_dtype;
  return kv;
}

// Probability of `token` under softmax(logits) at temperature 1.
float softmax_probability(const float* logits, int64_t n, int32_t token) {
  float max_logit = logits[0];
  for (int64_t i = 1; i < n; ++i) max_logit = std::max(max_logit, logits[i]);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i] - max_logit));
  return static_cast<float>(std::exp(static_cast<double>(logits[token] - max_logit)) / sum);
}

}  // namespace

void DraftModelOptions::validate() const {
  DSPARK_CHECK(num_speculative_tokens >= 1, "num_speculative_tokens must be >= 1, got {}", num_speculative_tokens);
  DSPARK_CHECK(p_min >= 0.0f && p_min <= 1.0f, "draft p_min must be within [0, 1], got {}", p_min);
  DSPARK_CHECK(max_running >= 1, "max_running must be >= 1, got {}", max_running);
  DSPARK_CHECK(block_size >= 1, "block_size must be >= 1, got {}", block_size);
}

DraftModelProposer::DraftModelProposer(std::unique_ptr<Transformer> draft_model, const DraftModelOptions& options)
    : model_(std::move(draft_model)),
      options_((options.validate(), options)),
      kv_(model_->config(), draft_kv_options(options_, model_->max_model_len())),
      allocator_(kv_.num_blocks()),
      logits_processor_(model_->config().vocab_size),
      slots_(options_.max_running),
      grammar_row_(model_->config().vocab_size) {
  DSPARK_CHECK(model_->options().max_sequences >= options_.max_running,
               "the draft model allows {} sequences per forward; {} are needed", model_->options().max_sequences,
               options_.max_running);
  DSPARK_CHECK(model_->options().max_batch_tokens >= options_.max_running,
               "the draft model allows {} tokens per forward; at least {} are needed",
               model_->options().max_batch_tokens, options_.max_running);
  const int64_t vocab = model_->config().vocab_size;
  for (auto& s : slots_) {
    s.probs.resize(options_.num_speculative_tokens * vocab);
    s.drafts.reserve(options_.num_speculative_tokens);
  }
  batch_tokens_.reserve(model_->options().max_batch_tokens);
  batch_rows_.reserve(options_.max_running);
  batch_slices_.reserve(options_.max_running);
  active_.reserve(options_.max_running);
  row_owner_.reserve(options_.max_running);
  drafting_.reserve(options_.max_running);
  cursor_.reserve(options_.max_running);
}

ProposerCapabilities DraftModelProposer::capabilities() const {
  ProposerCapabilities c;
  c.owns_kv_cache = true;
  c.provides_draft_probs = true;
  c.drafter_cost = DrafterCostShape::kPerDraft;
  return c;
}

void DraftModelProposer::release(int32_t slot) {
  SlotState& s = slots_[slot];
  s.blocks.release_all(allocator_);
  s.fed.clear();
  s.drafts.clear();
}

// The engine calls this for every decoding request; only those about to draft are fed.
void DraftModelProposer::catch_up(std::span<const DraftRequest> requests) {
  drafting_.clear();
  for (const DraftRequest& r : requests)
    if (r.max_drafts > 0) drafting_.push_back(r);
  feed_committed(drafting_);
}

int64_t DraftModelProposer::cached_tokens(int32_t slot) const {
  DSPARK_CHECK(slot >= 0 && slot < static_cast<int32_t>(slots_.size()), "slot {} outside 0..{}", slot,
               slots_.size() - 1);
  return static_cast<int64_t>(slots_[static_cast<size_t>(slot)].fed.size());
}

// Feeds every request's committed-but-not-cached tokens except the last one (which the
// first draft step feeds, to get the logits of the first draft), packing as many
// requests' tokens into each forward as the draft model allows.
void DraftModelProposer::feed_committed(std::span<const DraftRequest> requests) {
  const int64_t budget = model_->options().max_batch_tokens;
  std::vector<size_t>& cursor = cursor_;
  cursor.assign(requests.size(), 0);
  for (size_t i = 0; i < requests.size(); ++i) {
    SlotState& s = slots_[requests[i].slot];
    const auto& tokens = requests[i].tokens;
    // Keep the longest cached prefix that is still committed; never all of it (the last
    // committed token must be fed again to produce logits).
    size_t common = 0;
    const size_t limit = std::min(s.fed.size(), tokens.size() - 1);
    while (common < limit && s.fed[common] == tokens[common]) ++common;
    s.fed.resize(common);
    cursor[i] = common;
  }
  while (true) {
    batch_tokens_.clear();
    batch_slices_.clear();
    for (size_t i = 0; i < requests.size(); ++i) {
      const auto& tokens = requests[i].tokens;
      const size_t target = tokens.size() - 1;
      if (cursor[i] >= target) continue;
      const int64_t room = budget - static_cast<int64_t>(batch_tokens_.size());
      if (room <= 0) break;
      SlotState& s = slots_[requests[i].slot];
      const int64_t n = std::min<int64_t>(room, static_cast<int64_t>(target - cursor[i]));
      DSPARK_CHECK(s.blocks.reserve(static_cast<int64_t>(cursor[i]) + n, kv_.block_size(), allocator_),
                   "draft KV cache exhausted");
      batch_slices_.push_back({static_cast<int32_t>(n), static_cast<int32_t>(cursor[i]), s.blocks.data()});
      batch_tokens_.insert(batch_tokens_.end(), tokens.begin() + cursor[i], tokens.begin() + cursor[i] + n);
      s.fed.insert(s.fed.end(), tokens.begin() + cursor[i], tokens.begin() + cursor[i] + n);
      cursor[i] += n;
    }
    if (batch_tokens_.empty()) return;
    model_->forward(ForwardBatch{batch_tokens_, batch_slices_, {}}, kv_);
  }
}

void DraftModelProposer::draft_token(const DraftRequest& request, SlotState& s, const float* logits,
                                     bool& keep_drafting) {
  const int64_t vocab = model_->config().vocab_size;
  const SamplingParams& sp = *request.sampling;
  if (request.grammar) {  // draft among the tokens the output's grammar allows
    if (!grammar_bound_row(request, s.drafts, logits, grammar_row_.data(), vocab)) {
      keep_drafting = false;
      return;
    }
    logits = grammar_row_.data();
  }
  float* q = s.probs.data() + static_cast<int64_t>(s.drafts.size()) * vocab;
  // A greedy request's draft is the argmax, and its verification reads no q: none is made
  // (unless every logit is -inf or NaN; then the transform decides, as for the others).
  int32_t token = drafts_argmax(sp) ? greedy_draft_token(logits, vocab, {}, /*ascending=*/true) : -1;
  if (token < 0) token = transform_and_draw(logits_processor_, logits, q, vocab, request, s.drafts, history_);
  s.drafts.push_back(token);
  const float confidence = sp.greedy() ? softmax_probability(logits, vocab, token) : q[token];
  keep_drafting = static_cast<int32_t>(s.drafts.size()) < request.max_drafts && confidence >= options_.p_min;
}

void DraftModelProposer::propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) {
  DSPARK_CHECK(requests.size() <= slots_.size(), "{} requests but only {} draft slots", requests.size(), slots_.size());
  const int64_t vocab = model_->config().vocab_size;
  active_.clear();
  drafting_.clear();
  for (size_t i = 0; i < requests.size(); ++i) {
    slots_[requests[i].slot].drafts.clear();
    drafts[i] = Draft{};
    if (requests[i].max_drafts > 0) {
      active_.push_back({static_cast<int32_t>(i), requests[i].slot, true});
      drafting_.push_back(requests[i]);
    }
  }
  if (active_.empty()) return;
  feed_committed(drafting_);

  // Draft positions one at a time, all still-drafting requests in one forward: the first
  // feeds each request's last committed token, later ones its previous draft.
  while (true) {
    batch_tokens_.clear();
    batch_slices_.clear();
    batch_rows_.clear();
    row_owner_.clear();
    for (size_t a = 0; a < active_.size(); ++a) {
      if (!active_[a].drafting) continue;
      SlotState& s = slots_[active_[a].slot];
      const DraftRequest& r = requests[active_[a].request];
      const int32_t token = s.drafts.empty() ? r.tokens.back() : s.drafts.back();
      const int32_t position = static_cast<int32_t>(s.fed.size());
      DSPARK_CHECK(s.blocks.reserve(position + 1, kv_.block_size(), allocator_), "draft KV cache exhausted");
      batch_slices_.push_back({1, position, s.blocks.data()});
      batch_rows_.push_back(static_cast<int32_t>(batch_tokens_.size()));
      batch_tokens_.push_back(token);
      row_owner_.push_back(static_cast<int32_t>(a));
      s.fed.push_back(token);
    }
    if (batch_tokens_.empty()) break;
    const ForwardResult out = model_->forward(ForwardBatch{batch_tokens_, batch_slices_, batch_rows_}, kv_);
    for (size_t row = 0; row < row_owner_.size(); ++row) {
      Active& a = active_[row_owner_[row]];
      draft_token(requests[a.request], slots_[a.slot], out.logits + row * vocab, a.drafting);
    }
  }
  for (const Active& a : active_) {
    const SlotState& s = slots_[a.slot];
    const float* q = drafts_argmax(*requests[a.request].sampling) ? nullptr : s.probs.data();
    drafts[a.request] = Draft{s.drafts, q, nullptr};
  }
}

}  // namespace dspark
