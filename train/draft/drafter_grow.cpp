#include "train/draft/drafter_grow.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include <ATen/ATen.h>
#include <fmt/ranges.h>

#include "core/check.h"
#include "train/draft/drafter.h"

namespace dspark::train {

namespace {

// The leading slice of `grown` with the shape of `source`.
torch::Tensor leading_slice(const torch::Tensor& grown, const torch::Tensor& source, const std::string& name) {
  DSPARK_CHECK(grown.dim() == source.dim(), "grow drafter: {} has {} dims, the source's {}", name, grown.dim(),
               source.dim());
  torch::Tensor view = grown;
  for (int64_t d = 0; d < source.dim(); ++d) {
    DSPARK_CHECK(source.size(d) <= grown.size(d), "grow drafter: {} would shrink ({} -> {} in dim {})", name,
                 source.size(d), grown.size(d), d);
    view = view.narrow(d, 0, source.size(d));
  }
  return view;
}

}  // namespace

std::shared_ptr<DrafterImpl> grow_drafter(const DrafterImpl& source, const DrafterGrowth& to, double init_std,
                                          uint64_t seed) {
  const DrafterConfig& from = source.config();
  const int64_t source_layers = from.layer.num_hidden_layers;
  DSPARK_CHECK(to.layers >= source_layers, "grow drafter: --layers {} is fewer than the source's {}", to.layers,
               source_layers);
  DSPARK_CHECK(to.markov_rank >= from.markov_rank, "grow drafter: --markov-rank {} is below the source's {}",
               to.markov_rank, from.markov_rank);
  DSPARK_CHECK(to.markov_rank == from.markov_rank || from.markov_rank > 0,
               "grow drafter: the source has no Markov head; one cannot be grown (--markov-rank {})", to.markov_rank);

  const int64_t context_size = to.markov_context_size > 0 ? to.markov_context_size : from.markov_context_size;
  DSPARK_CHECK(context_size >= from.markov_context_size,
               "grow drafter: --grow-markov-context-size {} is below the source's {}", context_size,
               from.markov_context_size);
  DSPARK_CHECK(context_size == 0 || to.markov_rank > 0,
               "grow drafter: a contextual Markov head needs a Markov head (the source has none)");

  const std::vector<int32_t>& from_aux = from.aux_hidden_state_layer_ids;
  const std::vector<int32_t>& aux = to.aux_layer_ids.empty() ? from_aux : to.aux_layer_ids;
  DSPARK_CHECK(aux.size() >= from_aux.size() && std::equal(from_aux.begin(), from_aux.end(), aux.begin()),
               "grow drafter: the aux layer ids [{}] must start with the source's [{}] (fc's columns follow them)",
               fmt::join(aux, ", "), fmt::join(from_aux, ", "));

  DrafterConfig config = from;
  config.aux_hidden_state_layer_ids = aux;
  config.layer.num_hidden_layers = to.layers;
  config.markov_rank = to.markov_rank;
  config.markov_context_size = context_size;
  if (context_size > 0) config.markov_head_type = "contextual";
  config.validate("grown drafter");
  auto grown = std::make_shared<DrafterImpl>(config, source.embed_tokens(), source.lm_head());
  grown->init_weights(init_std, seed);

  std::unordered_map<std::string, torch::Tensor> source_params;
  for (const auto& item : source.named_parameters()) source_params.emplace(item.key(), item.value());
  at::NoGradGuard no_grad;
  for (auto& item : grown->named_parameters()) {
    const std::string& name = item.key();
    torch::Tensor& p = item.value();
    const int64_t layer = decoder_layer_index(name);
    const bool new_layer = layer >= source_layers;
    // Inert additions: a new layer's residual outputs, W₂, W_out, fc and the confidence
    // weights (zero as a whole; the source's slice is copied back below, so the new rows and
    // columns stay zero).
    if ((new_layer && (name.ends_with("o_proj.weight") || name.ends_with("down_proj.weight"))) ||
        name == "confidence_head.proj.weight" || name == "markov_head.markov_w2.weight" ||
        name == "markov_head.context_out.weight" || name == "fc.weight")
      p.zero_();
    if (new_layer || (name.starts_with("markov_head.context_") && !from.contextual_markov())) continue;
    const auto it = source_params.find(name);
    DSPARK_CHECK(it != source_params.end(), "grow drafter: the source has no {}", name);
    leading_slice(p, it->second, name).copy_(it->second);
    // [m, H + r]: the columns of new Markov ranks, which the old units must not see.
    if (name == "markov_head.context_in.weight") {
      const int64_t old_in = it->second.size(1);
      p.narrow(1, old_in, p.size(1) - old_in).zero_();
    }
  }
  return grown;
}

}  // namespace dspark::train
