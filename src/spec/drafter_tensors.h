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
//   markov_head.markov_w1.weight [V, r]   markov_head.markov_w2.weight [V_d, r]   (r > 0)
//   markov_head.context_in.weight [m, H + r]   markov_head.context_out.weight [r, m]
//                                              (contextual Markov head, m = markov_context_size)
//   confidence_head.proj.weight [1, H (+ r with confidence_head_with_markov)],
//   confidence_head.proj.bias [1]                                   (confidence head)
//   greedy_vocab.lm_head.weight [V_g, H], greedy_vocab.markov_w2.weight [V_g, r] (r > 0)
//                                              (greedy_draft_vocab_size V_g > 0)
//   optional: embed_tokens.weight [V, H], lm_head.weight [V_d, H]  (absent = the target's)
//
// V_d = draft_vocab_size. A reduced draft vocabulary (V_d < V) also has the int64 d2t [V_d]
// (and optionally t2d [V], spec/draft_vocab.h), not in this list of float tensors, and
// needs its own lm_head.weight: the rows of the target's LM head for its V_d tokens. W₁
// stays [V, r]: it embeds the previous token, which can be any target token. A greedy
// vocabulary likewise has greedy_vocab.d2t [V_g] beside its two float tensors.
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
