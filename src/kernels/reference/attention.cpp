// Scalar reference of paged attention: per query row, all scores, then a two-pass softmax,
// everything in f32 with plain sequential sums.
#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace dspark::reference {

void paged_attention(const PagedAttentionArgs& args, const KvLayerView& kv) {
  const int64_t d = kv.head_dim;
  const int64_t group = args.num_heads / kv.num_kv_heads;
  auto element = [&](const void* pool, int64_t index) {
    return kv.dtype == DType::kBF16 ? bf16_to_float(static_cast<const uint16_t*>(pool)[index])
                                    : static_cast<const float*>(pool)[index];
  };
  for (int64_t t = 0; t < args.num_tokens; ++t) {
    const int32_t* table = args.block_tables[args.seq_of_token[t]];
    // Visible positions [first, first + n): all num_keys, or the last `window` of them.
    const int64_t first = args.window > 0 ? std::max<int64_t>(0, args.num_keys[t] - args.window) : 0;
    const int64_t n = args.num_keys[t] - first;
    std::vector<int64_t> slots(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      const int64_t pos = first + j;
      slots[j] = int64_t{table[pos / kv.block_size]} * kv.block_size + pos % kv.block_size;
    }
    for (int64_t h = 0; h < args.num_heads; ++h) {
      const int64_t kv_head = h / group;
      const float* q = args.q + (t * args.num_heads + h) * d;
      std::vector<float> scores(static_cast<size_t>(n));
      float max = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < n; ++j) {
        float dot = 0.0f;
        for (int64_t i = 0; i < d; ++i) dot += q[i] * element(kv.k, key_index(kv, slots[j], kv_head, i));
        scores[j] = dot * args.scale;
        if (scores[j] > max) max = scores[j];
      }
      float sum = 0.0f;
      for (int64_t j = 0; j < n; ++j) {
        scores[j] = std::exp(scores[j] - max);
        sum += scores[j];
      }
      float* out = args.out + (t * args.num_heads + h) * d;
      for (int64_t i = 0; i < d; ++i) {
        float acc = 0.0f;
        for (int64_t j = 0; j < n; ++j) acc += scores[j] * element(kv.v, value_index(kv, slots[j], kv_head, i));
        out[i] = acc / sum;
      }
    }
  }
}

}  // namespace dspark::reference
