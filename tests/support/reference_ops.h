// Scalar building blocks of the reference forward passes (tests/support/reference_model,
// tests/spec/reference_drafter): written from the Hugging Face definitions, sharing no
// kernel code with the engine, accumulating in double. One row at a time, plain vectors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loader/config.h"
#include "loader/safetensors.h"

namespace dspark::testing::ref {

// Tensor `name` as f32 (the shape is checked); load_if: empty when the file lacks it.
std::vector<float> load(const WeightStore& store, const std::string& name, std::vector<int64_t> shape);
std::vector<float> load_if(const WeightStore& store, const std::string& name, std::vector<int64_t> shape);

// The weights of one pre-norm decoder layer; absent optional tensors (q/k norms, biases)
// are empty.
struct LayerWeights {
  std::vector<float> input_norm, post_norm, q_norm, k_norm;                // [hidden] / [head_dim]
  std::vector<float> wq, wk, wv, wo, bq, bk, bv, bo;                       // attention
  std::vector<float> gate, up, down, bgate, bup, bdown;                    // MLP
};
// Reads {prefix}input_layernorm.weight, {prefix}self_attn.q_proj.weight, ... under config c.
LayerWeights load_layer(const WeightStore& store, const std::string& prefix, const ModelConfig& c);

// y[o] = sum_i x[i] * w[o, i] (+ b[o]); x: [in], w: [out, in]. bf16: x and w rounded to
// bf16 first (the engine's bf16 compute).
std::vector<float> matvec(const float* x, const std::vector<float>& w, const std::vector<float>& b, int64_t out,
                          int64_t in, bool bf16);

// x[0..n) = x / rms(x) * w, in place.
void rmsnorm(float* x, const std::vector<float>& w, float eps, int64_t n);

// RoPE inverse frequencies [head_dim / 2] of c with its rope_scaling applied (linear,
// dynamic NTK fixed at original * factor as the engine documents, yarn, llama3), worked
// out in double from the published formulas and rounded to f32 at the end.
std::vector<float> inverse_frequencies(const ModelConfig& c);

// The factor yarn applies to cos and sin (1 for other scalings).
double cos_sin_scale(const ModelConfig& c);

// Rotate-half RoPE on one head vector x[dim] at position pos; cos and sin times `scale`.
void rope(float* x, int64_t dim, int32_t pos, const std::vector<float>& inv_freq, double scale = 1.0);

// Projects a normed row x [hidden] to `heads` heads ([heads * head_dim]) with w, b, then per
// head: RMSNorm with head_norm (when not empty) and RoPE at pos. For queries and keys.
std::vector<float> project_heads(const std::vector<float>& x, const std::vector<float>& w,
                                 const std::vector<float>& b, const std::vector<float>& head_norm, int64_t heads,
                                 int32_t pos, const std::vector<float>& inv_freq, const ModelConfig& c, bool bf16);

// x [hidden] += o_proj(attention of the query q [heads * head_dim] over keys[first_key..num_keys)
// and values[first_key..num_keys), each [kv_heads * head_dim]; softmax with scale
// 1/sqrt(head_dim)). first_key > 0: a sliding window.
void add_attention(std::vector<float>& x, const std::vector<float>& q, const std::vector<std::vector<float>>& keys,
                   const std::vector<std::vector<float>>& values, int64_t num_keys, const LayerWeights& layer,
                   const ModelConfig& c, bool bf16, int64_t first_key = 0);

// x [hidden] += down(silu(gate(n)) * up(n)), n = post_attention_layernorm(x).
void add_mlp(std::vector<float>& x, const LayerWeights& layer, const ModelConfig& c, bool bf16);

}  // namespace dspark::testing::ref
