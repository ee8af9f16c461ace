// The EAGLE-3 drafter module: its parameters and buffers, the row forward over a KV cache,
// the training-time test, and greedy drafting.
#include "train/draft/eagle3.h"

#include <cmath>
#include <limits>
#include <string>

#include <ATen/ATen.h>

#include "core/check.h"
#include "spec/drafter_config.h"
#include "train/model/tensor_ops.h"

namespace dspark::train {

namespace {

const auto kLongOpts = at::TensorOptions().dtype(at::kLong);
const auto kBoolOpts = at::TensorOptions().dtype(at::kBool);

// Positions 0..t−1 for each of b rows: [B, T] int64.
torch::Tensor sequence_positions(int64_t b, int64_t t) { return at::arange(t, kLongOpts).unsqueeze(0).expand({b, t}); }

// The step-0 tokens of a sequence: row i gets t_{i+1}; the last row a placeholder. [B, T]
torch::Tensor next_tokens(const torch::Tensor& ids) {
  const int64_t b = ids.size(0), t = ids.size(1);
  return at::cat({ids.narrow(1, 1, t - 1).to(at::kLong), at::zeros({b, 1}, kLongOpts)}, 1);
}

// [Q, Q] true above the diagonal: a row may not see the rows after it.
torch::Tensor future_mask(int64_t q) { return at::ones({q, q}, kBoolOpts).triu(1); }

}  // namespace

Eagle3Impl::Eagle3Impl(const Eagle3Config& config, torch::Tensor embed_tokens)
    : config_(config), embed_tokens_(embed_tokens.detach()) {
  config_.validate("eagle3 drafter config");
  const ModelConfig& c = config_.layer;
  const int64_t h = c.hidden_size, v = c.vocab_size, vd = config_.draft_vocab_size;
  DSPARK_CHECK(config_.aux_hidden_state_layer_ids.size() == 3,
               "eagle3 drafter: the aux layer ids must be explicit (3 ids), got {}",
               config_.aux_hidden_state_layer_ids.size());
  DSPARK_CHECK(embed_tokens_.dim() == 2 && embed_tokens_.size(0) == v && embed_tokens_.size(1) == h,
               "eagle3 drafter: the target's embedding table is {}, expected [{}, {}] (vocab, drafter hidden size): "
               "the drafter shares it, so its hidden size must be the target's",
               c10::str(embed_tokens_.sizes()), v, h);
  fc_ = register_module("fc", std::make_shared<LinearImpl>(3 * config_.target_hidden_size, h, false));
  auto layers = register_module("layers", std::make_shared<torch::nn::Module>());
  layer_ = layers->register_module("0", std::make_shared<Eagle3LayerImpl>(c, config_.norm_before_residual));
  norm_ = register_module("norm", std::make_shared<RmsNormImpl>(h, c.rms_norm_eps));
  lm_head_ = register_module("lm_head", std::make_shared<LinearImpl>(h, vd, false));
  // Until set_draft_vocab: the first V_d target ids.
  d2t_ = register_buffer("d2t", at::zeros({vd}, kLongOpts));
  t2d_ = register_buffer("t2d", at::arange(v, kLongOpts).lt(vd));
  target_ids_ = at::arange(vd, kLongOpts);
  inv_freq_ = rope_inv_freq(c);
  attention_scaling_ = rope_attention_scaling(c);
}

void Eagle3Impl::init_weights(double std, uint64_t seed) {
  at::NoGradGuard no_grad;
  at::manual_seed(seed);
  const double residual_std = std / std::sqrt(2.0);  // one layer: two residual branches
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    auto& p = item.value();
    if (name.ends_with("norm.weight")) {
      p.fill_(1.0);
    } else if (name.ends_with(".bias")) {
      p.zero_();
    } else if (name.ends_with("o_proj.weight") || name.ends_with("down_proj.weight")) {
      p.normal_(0.0, residual_std);
    } else {
      p.normal_(0.0, std);
    }
  }
}

void Eagle3Impl::init_head_from_target(const torch::Tensor& target_lm_head, const torch::Tensor& target_norm) {
  at::NoGradGuard no_grad;
  const int64_t h = config_.layer.hidden_size;
  DSPARK_CHECK(target_lm_head.dim() == 2 && target_lm_head.size(0) == config_.layer.vocab_size &&
                   target_lm_head.size(1) == h && target_norm.dim() == 1 && target_norm.size(0) == h,
               "eagle3 drafter: the target's LM head {} / final norm {} do not fit [{}, {}] / [{}]",
               c10::str(target_lm_head.sizes()), c10::str(target_norm.sizes()), config_.layer.vocab_size, h, h);
  lm_head_->weight.copy_(target_lm_head.detach().index_select(0, target_ids_));
  norm_->weight.copy_(target_norm.detach());
}

void Eagle3Impl::set_draft_vocab(const DraftVocab& vocab) {
  at::NoGradGuard no_grad;
  DSPARK_CHECK(vocab.size() == config_.draft_vocab_size &&
                   static_cast<int64_t>(vocab.t2d.size()) == config_.layer.vocab_size,
               "eagle3 drafter: a draft vocabulary of {} ids over {} target ids does not fit draft_vocab_size {} / "
               "vocab_size {}",
               vocab.size(), vocab.t2d.size(), config_.draft_vocab_size, config_.layer.vocab_size);
  d2t_.copy_(torch::from_blob(const_cast<int64_t*>(vocab.d2t.data()), {vocab.size()}, kLongOpts));
  t2d_.copy_(torch::from_blob(const_cast<uint8_t*>(vocab.t2d.data()), {config_.layer.vocab_size}, at::kByte)
                 .to(at::kBool));
  target_ids_ = at::arange(vocab.size(), kLongOpts) + d2t_;
}

DraftVocab Eagle3Impl::draft_vocab() const {
  auto d2t = d2t_.contiguous();
  return draft_vocab_from_d2t({d2t.data_ptr<int64_t>(), static_cast<size_t>(d2t.numel())},
                              config_.layer.vocab_size);
}

std::vector<int64_t> Eagle3Impl::capture_layers() const {
  std::vector<int64_t> out;
  for (int32_t id : config_.aux_hidden_state_layer_ids) out.push_back(aux_layer_id_to_capture_layer(id));
  return out;
}

int64_t Eagle3Impl::num_parameters() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

torch::Tensor Eagle3Impl::features(const torch::Tensor& aux) const {
  const int64_t fc_in = fc_->weight.size(1);
  DSPARK_CHECK(aux.dim() == 3 && aux.size(2) == fc_in, "eagle3 drafter: target features are {}, expected [B, T, {}]",
               c10::str(aux.sizes()), fc_in);
  return fc_->forward(to_autocast_dtype(aux)).to(at::kFloat);
}

torch::Tensor Eagle3Impl::head(const torch::Tensor& r) const {
  return lm_head_->forward(to_autocast_dtype(norm_->forward(r)));
}

Eagle3Qkv Eagle3Impl::project(const torch::Tensor& x, const torch::Tensor& g, const torch::Tensor& positions) const {
  auto embeds = at::embedding(embed_tokens_, x.to(at::kLong));  // [B, Q, H]
  auto [cos, sin] = rope_cos_sin(inv_freq_, attention_scaling_, positions);
  return layer_->project(embeds, g, cos, sin);
}

Eagle3Rows Eagle3Impl::rows(const torch::Tensor& x, const torch::Tensor& g, const torch::Tensor& positions,
                            Eagle3KvCache& cache) const {
  const int64_t b = x.size(0), q = x.size(1), s = cache.size();
  DSPARK_CHECK(g.dim() == 3 && g.size(0) == b && g.size(1) == q && positions.size(0) == b && positions.size(1) == q,
               "eagle3 drafter: rows of tokens {}, features {}, positions {} disagree", c10::str(x.sizes()),
               c10::str(g.sizes()), c10::str(positions.sizes()));
  const Eagle3Qkv p = project(x, g, positions);
  // Keys: the cached rows (those each batch row may see), then the new rows causally.
  auto own = future_mask(q).view({1, 1, q, q}).expand({b, 1, q, q});
  torch::Tensor blocked = own;
  if (s > 0) {
    auto cached = cache.visible.defined() ? cache.visible.logical_not().view({b, 1, 1, s}).expand({b, 1, q, s})
                                          : at::zeros({b, 1, q, s}, kBoolOpts);
    blocked = at::cat({cached, own}, -1);  // [B, 1, Q, S + Q]
    cache.k = at::cat({cache.k, p.k}, 2);
    cache.v = at::cat({cache.v, p.v.to(cache.v.scalar_type())}, 2);
  } else {
    cache.k = p.k;
    cache.v = p.v;
  }
  if (cache.visible.defined()) cache.visible = at::cat({cache.visible, at::ones({b, q}, kBoolOpts)}, 1);
  auto r = layer_->finish(p.residual, masked_attention(p.q, cache.k, cache.v, blocked));
  return {r, head(r)};
}

torch::Tensor Eagle3Impl::greedy_target_ids(const torch::Tensor& draft_logits) const {
  at::NoGradGuard no_grad;
  return to_target_ids(draft_logits.argmax(-1));
}

torch::Tensor Eagle3Impl::to_target_ids(const torch::Tensor& draft_ids) const {
  return target_ids_.index_select(0, draft_ids.reshape({-1}).to(at::kLong)).view(draft_ids.sizes());
}

torch::Tensor Eagle3Impl::to_target_logits(const torch::Tensor& draft_logits) const {
  std::vector<int64_t> shape(draft_logits.sizes().begin(), draft_logits.sizes().end());
  shape.back() = config_.layer.vocab_size;
  auto out = at::full(shape, -std::numeric_limits<float>::infinity(), at::TensorOptions().dtype(at::kFloat));
  return out.index_copy_(draft_logits.dim() - 1, target_ids_, draft_logits.to(at::kFloat));
}

Eagle3Ttt Eagle3Impl::ttt(const torch::Tensor& aux, const torch::Tensor& ids, int64_t steps) const {
  const int64_t b = ids.size(0), t = ids.size(1);
  DSPARK_CHECK(steps >= 1 && t >= 2 && aux.size(0) == b && aux.size(1) == t,
               "eagle3 ttt: {} steps over ids {} and features {}", steps, c10::str(ids.sizes()),
               c10::str(aux.sizes()));
  const auto pos = sequence_positions(b, t);
  Eagle3Ttt out;
  out.tokens.push_back(next_tokens(ids));
  const Eagle3Qkv step0 = project(out.tokens[0], features(aux), pos);
  auto r = layer_->finish(step0.residual, masked_attention(step0.q, step0.k, step0.v, future_mask(t)));
  out.logits.push_back(head(r));
  std::vector<torch::Tensor> chain_k, chain_v;  // [B, nkv, T, D] per step >= 1
  for (int64_t s = 1; s < steps; ++s) {
    out.tokens.push_back(greedy_target_ids(out.logits.back()));
    const Eagle3Qkv p = project(out.tokens.back(), r, pos + s);
    chain_k.push_back(p.k);
    chain_v.push_back(p.v);
    r = layer_->finish(p.residual, chain_attention(p.q, step0.k, step0.v, chain_k, chain_v));
    out.logits.push_back(head(r));
  }
  return out;
}

torch::Tensor Eagle3Impl::context_logits(const torch::Tensor& aux, const torch::Tensor& ids) const {
  const int64_t b = ids.size(0), t = ids.size(1);
  Eagle3KvCache cache;
  return rows(next_tokens(ids), features(aux), sequence_positions(b, t), cache).logits;
}

Eagle3Context Eagle3Impl::context(const torch::Tensor& aux, const torch::Tensor& ids) const {
  const int64_t b = ids.size(0), n = ids.size(1);
  DSPARK_CHECK(n >= 2 && aux.size(0) == b && aux.size(1) >= n - 1,
               "eagle3 context: ids {} need >= 2 tokens and features {} for the first n−1", c10::str(ids.sizes()),
               c10::str(aux.sizes()));
  Eagle3Context c;
  const Eagle3Rows out = rows(ids.narrow(1, 1, n - 1), features(aux.narrow(1, 0, n - 1)),
                              sequence_positions(b, n - 1), c.cache);
  c.r = out.r;
  c.logits = out.logits;
  return c;
}

Eagle3Drafts Eagle3Impl::draft_chains(const Eagle3Context& context, const torch::Tensor& sequence,
                                      const torch::Tensor& last_row, int64_t k) const {
  DSPARK_CHECK(k >= 1, "eagle3 draft: k must be >= 1, got {}", k);
  const int64_t n = sequence.size(0), rows_per_seq = context.r.size(1), h = context.r.size(2);
  const auto seq = sequence.to(at::kLong), last = last_row.to(at::kLong);
  Eagle3KvCache cache;
  cache.k = context.cache.k.index_select(0, seq);
  cache.v = context.cache.v.index_select(0, seq);
  cache.visible = at::arange(cache.size(), kLongOpts).view({1, -1}).le(last.view({n, 1}));  // [N, S]
  const auto flat = seq * rows_per_seq + last;
  auto r = context.r.reshape({-1, h}).index_select(0, flat).unsqueeze(1);                  // [N, 1, H]
  auto logits = context.logits.reshape({-1, context.logits.size(-1)}).index_select(0, flat);  // [N, V_d]
  std::vector<torch::Tensor> all_logits{logits.to(at::kFloat)}, tokens{greedy_target_ids(logits)};
  for (int64_t j = 1; j < k; ++j) {
    const Eagle3Rows out = rows(tokens.back().view({n, 1}), r, (last + j).view({n, 1}), cache);
    r = out.r;
    logits = out.logits.squeeze(1);
    all_logits.push_back(logits.to(at::kFloat));
    tokens.push_back(greedy_target_ids(logits));
  }
  Eagle3Drafts d;
  d.tokens = at::stack(tokens, 1);
  d.draft_logits = at::stack(all_logits, 1);
  d.logits = to_target_logits(d.draft_logits);
  return d;
}

Eagle3Drafts Eagle3Impl::draft(const torch::Tensor& aux, const torch::Tensor& ids, int64_t k) const {
  const int64_t b = ids.size(0), n = ids.size(1);
  return draft_chains(context(aux, ids), at::arange(b, kLongOpts), at::full({b}, n - 2, kLongOpts), k);
}

}  // namespace dspark::train
