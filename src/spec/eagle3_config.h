// Eagle3Config: the config.json of an EAGLE-3 drafter, in either layout vLLM loads, parsed
// strictly and validated once; written back in the speculators layout.
//
// Speculators layout (speculators_model_type "eagle3"):
//   architectures                     ["Eagle3Speculator"] (also "Eagle3DraftModel")
//   transformer_layer_config          the draft layer: a Hugging Face llama / qwen3 config with
//                                     num_hidden_layers 1; vocab_size is the TARGET's vocabulary
//   draft_vocab_size                  rows of lm_head (the reduced draft vocabulary)
//   target_hidden_size                width of the target's hidden states (null = the layer's)
//   eagle_aux_hidden_state_layer_ids  3 target layers fused by fc, speculators convention
//                                     (id k = output of decoder layer k−1, spec/drafter_config.h);
//                                     absent: vLLM's default (2, L/2, L−3) for an L-layer target
//   norm_before_residual              the residual is the normed hidden state (default false)
//   speculators_config                {algorithm "eagle3", proposal_methods [{proposal_type
//                                     "greedy", speculative_tokens}], default_proposal_method,
//                                     verifier {name_or_path, architectures}}
//   Unknown top-level fields are errors (they would change what the weights mean).
//   Tensors: fc.weight [H, 3·H_t], layers.0.{input_layernorm,hidden_norm,post_attention_
//   layernorm}.weight [H], layers.0.self_attn.{q,k,v}_proj.weight [*, 2H] (+ .bias with
//   attention_bias), layers.0.self_attn.o_proj.weight, layers.0.self_attn.{q,k}_norm.weight
//   (qwen3), layers.0.mlp.{gate,up,down}_proj.weight, norm.weight [H], lm_head.weight [V_d, H],
//   d2t [V_d] int64, t2d [V] bool (optional), embed_tokens.weight [V, H] (optional: else the
//   target's, which needs H = H_t).
//
// Original EAGLE-3 layout (architectures ["LlamaForCausalLMEagle3"] or
// ["Eagle3LlamaForCausalLM"]): the config is itself the draft layer's llama config plus
// draft_vocab_size and optionally eagle_config {eagle_aux_hidden_state_layer_ids} and
// target_hidden_size; the layer's tensors are "midlayer.*" instead of "layers.0.*". Its other
// fields are a Hugging Face model config's and pass through ModelConfig's own checks.
//
// What the drafter computes (the engine's Eagle3Proposer and the trainer's module alike),
// for a row at sequence position p with token x and feature g [H]:
//   e = RMSNorm_in(embed(x)), n = RMSNorm_hidden(g), residual = norm_before_residual ? n : g
//   q, k, v = [e ; n] W_{q,k,v}ᵀ (q/k norms for qwen3, RoPE at p); causal attention over the
//   drafter's KV cache; y = residual + o_proj(attn); y += mlp(RMSNorm_post(y))
//   r = y (fed back as the next row's g), logits = lm_head(RMSNorm_final(y)) over the draft
//   vocabulary; draft id d is target token d + d2t[d].
// Context rows pair position p's target features g = fc(concat(h_l1, h_l2, h_l3)_p) with the
// NEXT token x = t_{p+1}; the row at the last committed position drafts the first token, and
// draft j+1 comes from a row at the next position with x = draft j and g = that row's r.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "loader/config.h"

namespace dspark {

struct Eagle3Config {
  enum class Layout { kSpeculators, kOriginal };

  Layout layout = Layout::kSpeculators;       // how the directory was written (tensor names)
  std::string architecture = "Eagle3Speculator";
  ModelConfig layer;                          // the draft layer; vocab_size = target vocabulary
  int64_t draft_vocab_size = 0;               // V_d
  int64_t target_hidden_size = 0;             // H_t
  std::vector<int32_t> aux_hidden_state_layer_ids;  // 3 ids, speculators convention; empty = vLLM default
  bool norm_before_residual = false;
  int32_t speculative_tokens = 3;             // default drafts per round (speculators_config)
  // Matmul weights at load unless the command line names them: "" (as the target's),
  // "none", "int8" or "int4" (model/load_quantization.h reads it for the engine).
  std::string quantization;
  std::string verifier_name_or_path;
  std::vector<std::string> verifier_architectures;

  // The engine's capture layers (output of decoder layer l), in fc column order, for a
  // target of `target_layers` decoder layers (the default ids depend on it).
  std::vector<int32_t> capture_layers(int64_t target_layers) const;
  // The aux ids in use: the config's, or vLLM's default for the target's depth.
  std::vector<int32_t> aux_layer_ids(int64_t target_layers) const;
  // Prefix of the decoder layer's tensors: "layers.0." or "midlayer.".
  std::string layer_prefix() const { return layout == Layout::kOriginal ? "midlayer." : "layers.0."; }

  static Eagle3Config from_json(const nlohmann::json& json, const std::string& source);
  // Reads DIR/config.json (or the file itself).
  static Eagle3Config from_file(const std::filesystem::path& path);
  // The speculators layout, which from_json reads back identically (layout aside).
  nlohmann::json to_json() const;
  // Internal consistency; throws naming `source` and the field.
  void validate(const std::string& source) const;
  // Fits the target? Throws naming the field and both values.
  void validate_for_target(const ModelConfig& target, const std::string& source) const;

  bool operator==(const Eagle3Config&) const = default;
};

// A floating-point tensor of the drafter's weights (d2t / t2d, integer and boolean, are not
// listed): its name in the config's layout and its shape.
struct Eagle3Tensor {
  std::string name;
  std::vector<int64_t> shape;
  bool optional = false;  // embed_tokens.weight: the target's when absent
};
std::vector<Eagle3Tensor> eagle3_tensors(const Eagle3Config& config);

// True when DIR/config.json describes an EAGLE-3 drafter in either layout.
bool is_eagle3_directory(const std::filesystem::path& dir);

}  // namespace dspark
