// One decoder layer of a block drafter (DFlash / DSpark backbone). A normal pre-norm
// Llama/Qwen3 layer whose attention takes queries from the block only and keys/values from
// the target context AND the block, through the same k/v projections:
//
//   context (committed positions, once):  K = rope(k_norm?(k_proj(ctx))), V = v_proj(ctx)
//                                          written to this layer's paged KV at their slots
//   block:  q,k,v = qkv(input_norm(x)); q/k norms; RoPE at the block positions; block K/V
//           written to scratch slots right after the context; every block query attends
//           to context + whole block (non-causal: num_keys = context + block length);
//           x += o_proj(attn); x += down(silu(gate(n)) * up(n)), n = post_norm(x)
//
// ctx is RMSNorm_h(fc(concat of the target's hidden states)): it does not pass through
// input_layernorm (as in the reference DFlash/DSpark attention). Once the context K/V are in
// the cache, the block path is exactly a DecoderLayer forward, so a DraftLayer is one
// DecoderLayer (tensors "layers.{i}.*") plus the context's k/v projection. Weights are
// pre-packed once; no allocation per call.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "kernels/attention.h"
#include "kernels/linear.h"
#include "kernels/rope.h"
#include "loader/config.h"
#include "model/decoder_layer.h"
#include "loader/safetensors.h"

namespace dspark {

// Buffers shared by all draft layers, sized once.
struct DraftLayerWorkspace {
  LayerWorkspace block;        // [max_block_rows, ...]; k and v hold max(block, context) rows
  std::vector<float> ctx_kv;   // [max_context_rows, 2 kv]

  DraftLayerWorkspace(const ModelConfig& config, int64_t max_block_rows, int64_t max_context_rows);
};

class DraftLayer {
 public:
  // Reads layers.{index}.* from the drafter's store. block_rows / context_rows: the most
  // rows either path is called with.
  // window: keys each block row attends to, counted back from its last (0 = all).
  DraftLayer(const ModelConfig& config, const WeightStore& weights, int64_t index, DType compute,
             WeightQuantization quantization, int64_t max_block_rows, int64_t max_context_rows, int64_t window = 0);

  // ctx: [n, hidden]; positions, slots: [n]. Writes the context's K/V into kv.
  void write_context(const float* ctx, int64_t n, const int32_t* positions, const int64_t* slots,
                     const RopeTable& rope, const KvLayerView& kv, DraftLayerWorkspace& ws);

  // x: [step.num_tokens, hidden], the block residual stream, updated in place. step.slots
  // are the block's scratch slots and step.num_keys the visible keys of every query.
  void forward_block(float* x, const LayerStepContext& step, const KvLayerView& kv, DraftLayerWorkspace& ws);

  // The layer's own weights (the context projection repeats its k/v weights: not counted).
  size_t weight_bytes() const;

 private:
  int64_t kv_width_;   // kv_heads * head_dim
  DecoderLayer layer_;  // the decoder layer itself, run over the block
  Linear kv_;          // [2 kv, hidden]: the context (same k/v weights as layer_)
};

}  // namespace dspark
