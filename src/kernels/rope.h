// Rotary position embedding, Hugging Face "rotate half" convention: dimension i is paired
// with i + head_dim/2. The table holds cos/sin per position computed as HF does in f32:
// angle = float(pos) * inv_freq[i]. Scalings that also scale cos and sin (yarn's
// attention_factor) multiply them once in f32, as HF's `emb.cos() * attention_scaling`;
// a scale of 1 leaves the table bit-identical to an unscaled one.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace dspark {

class RopeTable {
 public:
  // inv_freq: [head_dim / 2] (scaling such as llama3 already applied by the caller);
  // cos_sin_scale multiplies every cos and sin (1 = plain RoPE).
  RopeTable(std::span<const float> inv_freq, int64_t max_positions, float cos_sin_scale = 1.0f);
  int64_t half_dim() const { return half_dim_; }
  int64_t max_positions() const { return max_positions_; }
  const float* cos(int32_t position) const { return cos_.data() + position * half_dim_; }  // [half_dim]
  const float* sin(int32_t position) const { return sin_.data() + position * half_dim_; }  // [half_dim]

 private:
  int64_t half_dim_;
  int64_t max_positions_;
  std::vector<float> cos_;  // [max_positions, half_dim]
  std::vector<float> sin_;  // [max_positions, half_dim]
};

// x: [num_tokens, num_heads, head_dim], rotated in place; positions: [num_tokens].
void apply_rope(float* x, const int32_t* positions, int64_t num_tokens, int64_t num_heads,
                int64_t head_dim, const RopeTable& table);

namespace reference {
// Computes angles directly (no table) with the same f32 formula.
void apply_rope(float* x, const int32_t* positions, int64_t num_tokens, int64_t num_heads,
                int64_t head_dim, std::span<const float> inv_freq, float cos_sin_scale = 1.0f);
}  // namespace reference

}  // namespace dspark
