// The Hugging Face eager forward, op for op, so that f32 results match it to rounding and
// mixed-precision results match its autocast behaviour.
#include "train/model/transformer.h"

#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>

#include "core/check.h"
#include "train/model/tensor_ops.h"

namespace dspark::train {

LinearImpl::LinearImpl(int64_t in_features, int64_t out_features, bool with_bias) {
  weight = register_parameter("weight", torch::zeros({out_features, in_features}));
  if (with_bias) bias = register_parameter("bias", torch::zeros({out_features}));
}

torch::Tensor LinearImpl::forward(const torch::Tensor& x) const { return at::linear(x, weight, bias); }

RmsNormImpl::RmsNormImpl(int64_t size, float eps_) : eps(eps_) {
  weight = register_parameter("weight", torch::ones({size}));
}

torch::Tensor RmsNormImpl::forward(const torch::Tensor& x) const {
  const auto input_dtype = x.scalar_type();
  auto h = x.to(at::kFloat);
  auto variance = h.pow(2).mean(-1, /*keepdim=*/true);
  h = h * at::rsqrt(variance + eps);
  return weight * h.to(input_dtype);
}

AttentionImpl::AttentionImpl(const ModelConfig& c)
    : num_heads(c.num_attention_heads), num_kv_heads(c.num_key_value_heads), head_dim(c.head_dim) {
  const int64_t h = c.hidden_size;
  q_proj = register_module("q_proj", std::make_shared<LinearImpl>(h, num_heads * head_dim, c.attention_bias));
  k_proj = register_module("k_proj", std::make_shared<LinearImpl>(h, num_kv_heads * head_dim, c.attention_bias));
  v_proj = register_module("v_proj", std::make_shared<LinearImpl>(h, num_kv_heads * head_dim, c.attention_bias));
  o_proj = register_module("o_proj", std::make_shared<LinearImpl>(num_heads * head_dim, h, c.attention_output_bias));
  if (c.qk_norm) {
    q_norm = register_module("q_norm", std::make_shared<RmsNormImpl>(head_dim, c.rms_norm_eps));
    k_norm = register_module("k_norm", std::make_shared<RmsNormImpl>(head_dim, c.rms_norm_eps));
  }
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                     const torch::Tensor& mask) const {
  const int64_t b = x.size(0), t = x.size(1);
  auto q = q_proj->forward(x).view({b, t, num_heads, head_dim});     // [B, T, nh, D]
  auto k = k_proj->forward(x).view({b, t, num_kv_heads, head_dim});  // [B, T, nkv, D]
  auto v = v_proj->forward(x).view({b, t, num_kv_heads, head_dim});  // [B, T, nkv, D]
  if (q_norm) {
    q = q_norm->forward(q);
    k = k_norm->forward(k);
  }
  q = q.transpose(1, 2);  // [B, nh, T, D]
  k = k.transpose(1, 2);  // [B, nkv, T, D]
  v = v.transpose(1, 2);  // [B, nkv, T, D]

  // Under autocast q/k arrive in bf16 and cos/sin are f32: the reference promotes to f32;
  // casting first gives the same values without the slow mixed-dtype kernels.
  auto c = cos.unsqueeze(1);  // [B, 1, T, D]
  auto s = sin.unsqueeze(1);
  q = q.to(c.scalar_type());
  k = k.to(c.scalar_type());
  q = q * c + rotate_half(q) * s;
  k = k * c + rotate_half(k) * s;

  const int64_t n_rep = num_heads / num_kv_heads;
  k = repeat_kv(k, n_rep);
  v = repeat_kv(v, n_rep);

  const double scaling = 1.0 / std::sqrt(static_cast<double>(head_dim));
  auto scores = at::matmul(q, k.transpose(2, 3)) * scaling;  // [B, nh, T, T]
  // Adding a 0/-inf mask and filling -inf are the same values; the fill keeps bf16 scores
  // bf16 instead of materialising an f32 copy.
  scores = scores.masked_fill(mask, -std::numeric_limits<float>::infinity());
  auto probs = at::softmax(scores, -1, at::kFloat).to(q.scalar_type());
  auto out = at::matmul(probs, v);                            // [B, nh, T, D]
  out = out.transpose(1, 2).reshape({b, t, num_heads * head_dim});
  return o_proj->forward(out);
}

MlpImpl::MlpImpl(const ModelConfig& c) {
  gate_proj = register_module("gate_proj", std::make_shared<LinearImpl>(c.hidden_size, c.intermediate_size, c.mlp_bias));
  up_proj = register_module("up_proj", std::make_shared<LinearImpl>(c.hidden_size, c.intermediate_size, c.mlp_bias));
  down_proj = register_module("down_proj", std::make_shared<LinearImpl>(c.intermediate_size, c.hidden_size, c.mlp_bias));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) const {
  return down_proj->forward(at::silu(gate_proj->forward(x)) * up_proj->forward(x));
}

DecoderLayerImpl::DecoderLayerImpl(const ModelConfig& c) {
  self_attn = register_module("self_attn", std::make_shared<AttentionImpl>(c));
  mlp = register_module("mlp", std::make_shared<MlpImpl>(c));
  input_layernorm = register_module("input_layernorm", std::make_shared<RmsNormImpl>(c.hidden_size, c.rms_norm_eps));
  post_attention_layernorm =
      register_module("post_attention_layernorm", std::make_shared<RmsNormImpl>(c.hidden_size, c.rms_norm_eps));
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                        const torch::Tensor& mask) const {
  // Explicit casts give the values of the reference's implicit ones (autocast casts every
  // linear input; type promotion adds bf16 branches to the f32 residual in f32) but cast
  // each tensor once and keep the elementwise kernels single-dtype.
  auto h = x + self_attn->forward(to_autocast_dtype(input_layernorm->forward(x)), cos, sin, mask).to(x.scalar_type());
  return h + mlp->forward(to_autocast_dtype(post_attention_layernorm->forward(h))).to(h.scalar_type());
}

namespace {

// 1 / base^(arange(0, dim, 2) / dim), evaluated in f32 like the reference (a Python float
// base raised to an f32 tensor). [dim / 2]
torch::Tensor default_inv_freq(double base, int64_t dim) {
  auto exponents = at::arange(0, dim, 2, at::kLong).to(at::kFloat) / static_cast<double>(dim);
  return 1.0 / at::pow(base, exponents);
}

double original_context(const ModelConfig& c) {
  const int64_t original = c.rope_scaling.original_max_position_embeddings;
  return static_cast<double>(original > 0 ? original : c.max_position_embeddings);
}

// Hugging Face's _compute_llama3_parameters.
torch::Tensor llama3_inv_freq(const ModelConfig& c) {
  const auto& rs = c.rope_scaling;
  auto inv_freq = default_inv_freq(c.rope_theta, c.head_dim);
  const double old_len = static_cast<double>(rs.original_max_position_embeddings);
  const double low_freq_wavelen = old_len / rs.low_freq_factor;
  const double high_freq_wavelen = old_len / rs.high_freq_factor;
  auto wavelen = 2 * std::numbers::pi / inv_freq;
  auto scaled = at::where(wavelen > low_freq_wavelen, inv_freq / rs.factor, inv_freq);
  auto smooth = (old_len / wavelen - rs.low_freq_factor) / (rs.high_freq_factor - rs.low_freq_factor);
  auto smoothed = (1 - smooth) * scaled / rs.factor + smooth * scaled;
  auto is_medium = at::logical_not(wavelen < high_freq_wavelen) & at::logical_not(wavelen > low_freq_wavelen);
  return at::where(is_medium, smoothed, scaled);
}

// Hugging Face's _compute_yarn_parameters (frequencies): the correction range in Python
// floats, the ramp and the blend as f32 tensor operations.
torch::Tensor yarn_inv_freq(const ModelConfig& c) {
  const auto& rs = c.rope_scaling;
  const int64_t dim = c.head_dim;
  const double base = c.rope_theta;
  const double original = original_context(c);
  auto correction_dim = [&](double rotations) {
    return (static_cast<double>(dim) * std::log(original / (rotations * 2 * std::numbers::pi))) / (2 * std::log(base));
  };
  double low = correction_dim(rs.beta_fast), high = correction_dim(rs.beta_slow);
  if (rs.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;
  auto pos_freqs = at::pow(base, at::arange(0, dim, 2, at::kLong).to(at::kFloat) / static_cast<double>(dim));
  auto extrapolation = 1.0 / pos_freqs;
  auto interpolation = 1.0 / (rs.factor * pos_freqs);
  auto ramp = at::clamp((at::arange(dim / 2, at::kFloat) - low) / (high - low), 0, 1);
  auto extrapolation_factor = 1 - ramp;
  return interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor;
}

double yarn_mscale(double scale, double mscale) { return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0; }

}  // namespace

torch::Tensor rope_inv_freq(const ModelConfig& c) {
  const auto& rs = c.rope_scaling;
  switch (rs.kind) {
    case RopeScaling::Kind::kNone:
      break;
    case RopeScaling::Kind::kLinear:
      return (default_inv_freq(c.rope_theta, c.head_dim) / rs.factor).to(at::kFloat);
    case RopeScaling::Kind::kDynamic: {
      // The base fixed for the longest context the factor reaches, as the engine (and
      // vLLM) do: see model/rope_frequencies.h for why not Hugging Face's per-forward base.
      const double original = original_context(c);
      const double max_position = original * rs.factor;
      const double exponent = static_cast<double>(c.head_dim) / static_cast<double>(c.head_dim - 2);
      const double base = c.rope_theta * std::pow(rs.factor * max_position / original - (rs.factor - 1), exponent);
      return default_inv_freq(base, c.head_dim).to(at::kFloat);
    }
    case RopeScaling::Kind::kYarn:
      return yarn_inv_freq(c).to(at::kFloat);
    case RopeScaling::Kind::kLlama3:
      return llama3_inv_freq(c).to(at::kFloat);
  }
  return default_inv_freq(c.rope_theta, c.head_dim).to(at::kFloat);
}

double rope_attention_scaling(const ModelConfig& c) {
  const auto& rs = c.rope_scaling;
  if (rs.kind != RopeScaling::Kind::kYarn) return 1.0;
  if (rs.attention_factor > 0) return rs.attention_factor;
  if (rs.mscale != 0 && rs.mscale_all_dim != 0)
    return yarn_mscale(rs.factor, rs.mscale) / yarn_mscale(rs.factor, rs.mscale_all_dim);
  return yarn_mscale(rs.factor, 1.0);
}

CausalLmImpl::CausalLmImpl(const ModelConfig& c) : config_(c) {
  DSPARK_CHECK(c.vocab_size > 0 && c.hidden_size > 0 && c.num_hidden_layers > 0 && c.head_dim > 0 &&
                   c.num_attention_heads > 0 && c.num_key_value_heads > 0 &&
                   c.num_attention_heads % c.num_key_value_heads == 0 && c.head_dim % 2 == 0,
               "model config: invalid shape (vocab {}, hidden {}, layers {}, heads {}/{}, head_dim {})", c.vocab_size,
               c.hidden_size, c.num_hidden_layers, c.num_attention_heads, c.num_key_value_heads, c.head_dim);
  model_ = register_module("model", std::make_shared<torch::nn::Module>());
  auto embed = model_->register_module("embed_tokens", std::make_shared<WeightHolder>(c.vocab_size, c.hidden_size));
  embed_tokens_ = embed->weight;
  auto layers = model_->register_module("layers", std::make_shared<torch::nn::Module>());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i)
    layers_.push_back(layers->register_module(std::to_string(i), std::make_shared<DecoderLayerImpl>(c)));
  norm_ = model_->register_module("norm", std::make_shared<RmsNormImpl>(c.hidden_size, c.rms_norm_eps));
  if (!c.tie_word_embeddings)
    lm_head_ = register_module("lm_head", std::make_shared<LinearImpl>(c.hidden_size, c.vocab_size, false));
  inv_freq_ = rope_inv_freq(c);
  attention_scaling_ = rope_attention_scaling(c);
}

void CausalLmImpl::init_weights(double std, uint64_t seed) {
  at::NoGradGuard no_grad;
  at::manual_seed(seed);
  const double residual_std = std / std::sqrt(2.0 * static_cast<double>(config_.num_hidden_layers));
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    auto& p = item.value();
    auto ends_with = [&](std::string_view suffix) {
      return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (ends_with("norm.weight")) {
      p.fill_(1.0);
    } else if (ends_with(".bias")) {
      p.zero_();
    } else if (ends_with("o_proj.weight") || ends_with("down_proj.weight")) {
      p.normal_(0.0, residual_std);
    } else {
      p.normal_(0.0, std);
    }
  }
}

torch::Tensor CausalLmImpl::embed(const torch::Tensor& input_ids) const { return at::embedding(embed_tokens_, input_ids); }

torch::Tensor CausalLmImpl::lm_head_weight() const { return lm_head_ ? lm_head_->weight : embed_tokens_; }

torch::Tensor CausalLmImpl::run_layers(const torch::Tensor& input_ids, const torch::Tensor& positions,
                                       std::span<const int64_t> hidden_layers,
                                       std::vector<torch::Tensor>* hidden) const {
  DSPARK_CHECK(input_ids.dim() == 2, "forward: input_ids must be [batch, seq], got {} dims", input_ids.dim());
  const int64_t b = input_ids.size(0), t = input_ids.size(1);
  torch::Tensor pos;  // [B, T] int64
  if (!positions.defined()) {
    pos = at::arange(t, at::kLong).unsqueeze(0).expand({b, t});
  } else if (positions.dim() == 1) {
    pos = positions.to(at::kLong).unsqueeze(0).expand({b, t});
  } else {
    pos = positions.to(at::kLong);
  }
  auto h = embed(input_ids);  // [B, T, H]

  // Angles float(pos) * inv_freq in f32; cos/sin in f32, then in the hidden dtype.
  auto freqs = pos.to(at::kFloat).unsqueeze(-1) * inv_freq_.view({1, 1, -1});  // [B, T, D/2]
  auto emb = at::cat({freqs, freqs}, -1);                                       // [B, T, D]
  auto cos = (emb.cos() * attention_scaling_).to(h.scalar_type());
  auto sin = (emb.sin() * attention_scaling_).to(h.scalar_type());
  auto causal = at::ones({t, t}, at::kBool).triu(1);  // [T, T], true above the diagonal (future)
  // [T, T]: also true where the key is W or more positions behind the query (Hugging
  // Face's sliding-window mask keeps keys j with i - W < j <= i).
  torch::Tensor windowed;
  if (config_.sliding_window > 0) windowed = causal | at::ones({t, t}, at::kBool).tril(-config_.sliding_window);

  for (int64_t i = 0; i < static_cast<int64_t>(layers_.size()); ++i) {
    const bool slides = config_.sliding_window > 0 && config_.sliding_layers.at(i);
    h = layers_[i]->forward(h, cos, sin, slides ? windowed : causal);
    if (hidden) {
      for (int64_t l : hidden_layers)
        if (l == i) hidden->push_back(h);
    }
  }
  return to_autocast_dtype(norm_->forward(h));
}

ForwardOutput CausalLmImpl::forward(const torch::Tensor& input_ids, std::span<const int64_t> hidden_layers,
                                    const torch::Tensor& positions) const {
  for (int64_t l : hidden_layers)
    DSPARK_CHECK(l >= 0 && l < config_.num_hidden_layers, "forward: hidden layer {} out of range [0, {})", l,
                 config_.num_hidden_layers);
  ForwardOutput out;
  std::vector<torch::Tensor> found;
  auto h = run_layers(input_ids, positions, hidden_layers, &found);
  // found[] is in layer order (then request order within a layer); return the caller's order.
  out.hidden_states.resize(hidden_layers.size());
  size_t k = 0;
  for (int64_t layer = 0; layer < config_.num_hidden_layers; ++layer)
    for (size_t j = 0; j < hidden_layers.size(); ++j)
      if (hidden_layers[j] == layer) out.hidden_states[j] = found[k++];
  out.logits = at::linear(h, lm_head_weight());
  return out;
}

torch::Tensor CausalLmImpl::final_hidden(const torch::Tensor& input_ids, const torch::Tensor& positions) const {
  return run_layers(input_ids, positions, {}, nullptr);
}

int64_t CausalLmImpl::num_parameters() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

}  // namespace dspark::train
