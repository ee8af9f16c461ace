#include "model/rope_frequencies.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/check.h"

namespace dspark {
namespace {

// transformers' default: 1 / base ** (arange(0, dim, 2) / dim), base rounded to f32 (a
// Python float raised to an f32 tensor).
// Each f32 operation is rounded on its own (as torch does), so no fused multiply-add.
[[gnu::optimize("fp-contract=off")]] std::vector<float> default_inverse_frequencies(double base, int64_t dim) {
  std::vector<float> inv_freq(dim / 2);  // [dim / 2]
  for (int64_t i = 0; i < dim / 2; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(dim);
    inv_freq[i] = 1.0f / std::pow(static_cast<float>(base), exponent);
  }
  return inv_freq;
}

// original_max_position_embeddings of a dynamic / yarn scaling, the config's when absent.
double original_context(const ModelConfig& config) {
  const int64_t original = config.rope_scaling.original_max_position_embeddings;
  return static_cast<double>(original > 0 ? original : config.max_position_embeddings);
}

[[gnu::optimize("fp-contract=off")]] void apply_llama3(const RopeScaling& s, std::vector<float>& inv_freq) {
  // Llama 3.1: stretch long wavelengths by `factor`, keep short ones, blend in between.
  const float factor = static_cast<float>(s.factor);
  const float old_len = static_cast<float>(s.original_max_position_embeddings);
  const float low_freq_wavelen = old_len / s.low_freq_factor;
  const float high_freq_wavelen = old_len / s.high_freq_factor;
  for (float& f : inv_freq) {
    const float wavelen = 2.0f * std::numbers::pi_v<float> / f;
    if (wavelen > low_freq_wavelen) {
      f = f / factor;
    } else if (wavelen >= high_freq_wavelen) {
      const float smooth = (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      f = (1.0f - smooth) * f / factor + smooth * f;
    }
  }
}

// transformers' _compute_yarn_parameters (the frequency part). The correction range is
// Python arithmetic (double); pos_freqs, the ramp and the blend are f32 tensor operations.
[[gnu::optimize("fp-contract=off")]] std::vector<float> yarn_inverse_frequencies(const ModelConfig& config) {
  const RopeScaling& s = config.rope_scaling;
  const int64_t dim = config.head_dim;
  const double base = config.rope_theta;
  const double original = original_context(config);
  // Dimension index at which a wavelength completes `rotations` turns over the context.
  auto correction_dim = [&](double rotations) {
    return (static_cast<double>(dim) * std::log(original / (rotations * 2 * std::numbers::pi))) /
           (2 * std::log(base));
  };
  double low = correction_dim(s.beta_fast), high = correction_dim(s.beta_slow);
  if (s.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;  // transformers: prevent a zero-width ramp
  const float ramp_low = static_cast<float>(low);
  const float ramp_width = static_cast<float>(high - low);
  const float factor = static_cast<float>(s.factor);
  const float theta = static_cast<float>(base);
  std::vector<float> inv_freq(dim / 2);  // [dim / 2]
  for (int64_t i = 0; i < dim / 2; ++i) {
    const float pos_freq = std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(dim));
    const float extrapolation = 1.0f / pos_freq;
    const float interpolation = 1.0f / (factor * pos_freq);
    const float ramp = std::clamp((static_cast<float>(i) - ramp_low) / ramp_width, 0.0f, 1.0f);
    const float extrapolation_factor = 1.0f - ramp;
    inv_freq[i] = interpolation * (1.0f - extrapolation_factor) + extrapolation * extrapolation_factor;
  }
  return inv_freq;
}

// yarn's get_mscale: 0.1 * mscale * ln(scale) + 1, or 1 for scale <= 1.
double yarn_mscale(double scale, double mscale) { return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0; }

}  // namespace

std::vector<float> rope_inverse_frequencies(const ModelConfig& config) {
  const RopeScaling& s = config.rope_scaling;
  const int64_t dim = config.head_dim;
  switch (s.kind) {
    case RopeScaling::Kind::kNone:
      return default_inverse_frequencies(config.rope_theta, dim);
    case RopeScaling::Kind::kLinear: {
      std::vector<float> inv_freq = default_inverse_frequencies(config.rope_theta, dim);
      for (float& f : inv_freq) f /= static_cast<float>(s.factor);
      return inv_freq;
    }
    case RopeScaling::Kind::kDynamic: {
      DSPARK_CHECK(dim > 2, "dynamic rope_scaling needs head_dim > 2, got {}", dim);
      // Fixed for the longest context the factor reaches (vLLM's choice, see the header).
      const double original = original_context(config);
      const double max_position = original * s.factor;
      const double exponent = static_cast<double>(dim) / static_cast<double>(dim - 2);
      const double base = static_cast<double>(config.rope_theta) *
                          std::pow(s.factor * max_position / original - (s.factor - 1), exponent);
      return default_inverse_frequencies(base, dim);
    }
    case RopeScaling::Kind::kYarn:
      return yarn_inverse_frequencies(config);
    case RopeScaling::Kind::kLlama3: {
      std::vector<float> inv_freq = default_inverse_frequencies(config.rope_theta, dim);
      apply_llama3(s, inv_freq);
      return inv_freq;
    }
  }
  return default_inverse_frequencies(config.rope_theta, dim);
}

float rope_attention_factor(const ModelConfig& config) {
  const RopeScaling& s = config.rope_scaling;
  if (s.kind != RopeScaling::Kind::kYarn) return 1.0f;
  if (s.attention_factor > 0) return static_cast<float>(s.attention_factor);
  if (s.mscale != 0 && s.mscale_all_dim != 0)
    return static_cast<float>(yarn_mscale(s.factor, s.mscale) / yarn_mscale(s.factor, s.mscale_all_dim));
  return static_cast<float>(yarn_mscale(s.factor, 1.0));
}

}  // namespace dspark
