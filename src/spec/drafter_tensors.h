// The tensors of a block drafter directory (speculators layout, DESIGN §5), with the shape
// each must have under its DrafterConfig — the one list the loader checks against and
// writers (the trainer's export, test fixtures) produce. H = transformer_layer_config
// hidden size, k = number of aux layers, H_t = target_hidden_size, V = vocabulary,
// r = markov_rank:
//
//   fc.weight [H, k·H_t]   hidden_norm.weight [H]   norm.weight [H]
//   layers.{i}.self_attn.{q,k,v,o}_proj.weight (+ .bias when the layer config has them)
//   layers.{i}.self_attn.{q,k}_norm.weight [head_dim]   (qwen3 layer configs)
//   layers.{i}.mlp.{gate,up,down}_proj.weight (+ .bias with mlp_bias)
//   layers.{i}.{input,post_attention}_layernorm.weight [H]
//   markov_head.markov_w1.weight [V, r]   markov_head.markov_w2.weight [V, r]   (r > 0)
//   confidence_head.proj.weight [1, H (+ r with confidence_head_with_markov)],
//   confidence_head.proj.bias [1]                                   (confidence head)
//   optional: embed_tokens.weight [V, H], lm_head.weight [V, H]  (absent = the target's)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spec/drafter_config.h"

namespace dspark {

struct DrafterTensor {
  std::string name;
  std::vector<int64_t> shape;
  bool optional = false;  // may be absent (then shared with the target)
};

// In a fixed order: fc, hidden_norm, layers, norm, Markov head, confidence head, optional.
std::vector<DrafterTensor> drafter_tensors(const DrafterConfig& config);

// Name of a per-layer tensor: "layers.{layer}.{suffix}".
std::string drafter_layer_tensor(int64_t layer, const std::string& suffix);

}  // namespace dspark
