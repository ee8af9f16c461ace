#include "spec/draft_layer.h"

#include <algorithm>
#include <cstring>

#include "model/fused_linear.h"
#include "spec/drafter_tensors.h"

namespace dspark {

DraftLayerWorkspace::DraftLayerWorkspace(const ModelConfig& c, int64_t block_rows, int64_t context_rows)
    : block(c, block_rows, std::max(block_rows, context_rows)), ctx_kv(context_rows * 2 * c.kv_size()) {}

DraftLayer::DraftLayer(const ModelConfig& c, const WeightStore& store, int64_t index, DType compute,
                       WeightQuantization quantization, int64_t max_block_rows, int64_t max_context_rows,
                       int64_t window)
    : kv_width_(c.kv_size()),
      layer_(c, store, drafter_layer_tensor(index, ""),
             LinearOptions{compute, std::max<int64_t>(max_block_rows, 1), LinearBackend::kAuto, quantization}, window),
      kv_(load_fused_linear(store,
                            {drafter_layer_tensor(index, "self_attn.k_proj"),
                             drafter_layer_tensor(index, "self_attn.v_proj")},
                            {c.kv_size(), c.kv_size()}, c.hidden_size, c.attention_bias,
                            LinearOptions{compute, std::max<int64_t>(max_context_rows, 1), LinearBackend::kAuto,
                                          quantization})) {}

void DraftLayer::write_context(const float* ctx, int64_t n, const int32_t* positions, const int64_t* slots,
                               const RopeTable& rope, const KvLayerView& kv, DraftLayerWorkspace& ws) {
  float* k = ws.block.k.data();  // [n, kv]
  float* v = ws.block.v.data();  // [n, kv]
  kv_.forward(ctx, ws.ctx_kv.data(), n);
  for (int64_t t = 0; t < n; ++t) {
    const float* row = ws.ctx_kv.data() + t * 2 * kv_width_;  // [k | v]
    std::memcpy(k + t * kv_width_, row, kv_width_ * sizeof(float));
    std::memcpy(v + t * kv_width_, row + kv_width_, kv_width_ * sizeof(float));
  }
  layer_.prepare_keys(k, n, positions, rope);
  write_kv(k, v, slots, n, kv);
}

void DraftLayer::forward_block(float* x, const LayerStepContext& step, const KvLayerView& kv, DraftLayerWorkspace& ws) {
  layer_.forward(x, step, kv, ws.block);
}

size_t DraftLayer::weight_bytes() const { return layer_.weight_bytes(); }

}  // namespace dspark
