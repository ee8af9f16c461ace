#include "spec/drafter_tensors.h"

#include <fmt/format.h>

namespace dspark {

std::string drafter_layer_tensor(int64_t layer, const std::string& suffix) {
  return fmt::format("layers.{}.{}", layer, suffix);
}

std::vector<DrafterTensor> drafter_tensors(const DrafterConfig& c) {
  const ModelConfig& m = c.layer;
  const int64_t h = m.hidden_size, q = m.q_size(), kv = m.kv_size(), f = m.intermediate_size;
  const int64_t k = static_cast<int64_t>(c.aux_hidden_state_layer_ids.size());
  const int64_t vocab = m.vocab_size, draft_vocab = c.draft_vocab_size;
  std::vector<DrafterTensor> out;
  auto add = [&](std::string name, std::vector<int64_t> shape, bool optional = false) {
    out.push_back({std::move(name), std::move(shape), optional});
  };
  add("fc.weight", {h, k * c.target_hidden_size});
  add("hidden_norm.weight", {h});
  for (int64_t l = 0; l < m.num_hidden_layers; ++l) {
    auto t = [l](const std::string& suffix) { return drafter_layer_tensor(l, suffix); };
    add(t("input_layernorm.weight"), {h});
    add(t("self_attn.q_proj.weight"), {q, h});
    add(t("self_attn.k_proj.weight"), {kv, h});
    add(t("self_attn.v_proj.weight"), {kv, h});
    if (m.attention_bias) {
      add(t("self_attn.q_proj.bias"), {q});
      add(t("self_attn.k_proj.bias"), {kv});
      add(t("self_attn.v_proj.bias"), {kv});
    }
    add(t("self_attn.o_proj.weight"), {h, q});
    if (m.attention_output_bias) add(t("self_attn.o_proj.bias"), {h});
    if (m.qk_norm) {
      add(t("self_attn.q_norm.weight"), {m.head_dim});
      add(t("self_attn.k_norm.weight"), {m.head_dim});
    }
    add(t("post_attention_layernorm.weight"), {h});
    add(t("mlp.gate_proj.weight"), {f, h});
    add(t("mlp.up_proj.weight"), {f, h});
    add(t("mlp.down_proj.weight"), {h, f});
    if (m.mlp_bias) {
      add(t("mlp.gate_proj.bias"), {f});
      add(t("mlp.up_proj.bias"), {f});
      add(t("mlp.down_proj.bias"), {h});
    }
  }
  add("norm.weight", {h});
  if (c.markov_rank > 0) {
    add("markov_head.markov_w1.weight", {vocab, c.markov_rank});
    add("markov_head.markov_w2.weight", {draft_vocab, c.markov_rank});
    if (c.contextual_markov()) {
      add("markov_head.context_in.weight", {c.markov_context_size, h + c.markov_rank});
      add("markov_head.context_out.weight", {c.markov_rank, c.markov_context_size});
    }
  }
  if (c.enable_confidence_head) {
    add("confidence_head.proj.weight", {1, h + (c.confidence_head_with_markov ? c.markov_rank : 0)});
    add("confidence_head.proj.bias", {1});
  }
  if (c.greedy_draft_vocab_size > 0) {
    add("greedy_vocab.lm_head.weight", {c.greedy_draft_vocab_size, h});
    if (c.markov_rank > 0) add("greedy_vocab.markov_w2.weight", {c.greedy_draft_vocab_size, c.markov_rank});
  }
  add("embed_tokens.weight", {vocab, h}, true);
  add("lm_head.weight", {draft_vocab, h}, !c.reduces_vocab());
  return out;
}

}  // namespace dspark
