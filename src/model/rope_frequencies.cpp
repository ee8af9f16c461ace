#include "model/rope_frequencies.h"

#include <cmath>
#include <numbers>

namespace dspark {

std::vector<float> rope_inverse_frequencies(const ModelConfig& config) {
  const int64_t dim = config.head_dim;
  std::vector<float> inv_freq(dim / 2);  // [head_dim / 2]
  for (int64_t i = 0; i < dim / 2; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(dim);
    inv_freq[i] = 1.0f / std::pow(config.rope_theta, exponent);
  }
  const RopeScaling& s = config.rope_scaling;
  if (s.kind == RopeScaling::Kind::kLlama3) {
    // Llama 3.1: stretch long wavelengths by `factor`, keep short ones, blend in between.
    const float old_len = static_cast<float>(s.original_max_position_embeddings);
    const float low_freq_wavelen = old_len / s.low_freq_factor;
    const float high_freq_wavelen = old_len / s.high_freq_factor;
    for (float& f : inv_freq) {
      const float wavelen = 2.0f * std::numbers::pi_v<float> / f;
      if (wavelen > low_freq_wavelen) {
        f = f / s.factor;
      } else if (wavelen >= high_freq_wavelen) {
        const float smooth = (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f = (1.0f - smooth) * f / s.factor + smooth * f;
      }
    }
  }
  return inv_freq;
}

}  // namespace dspark
