#include "train/model/hf_weights.h"

#include <cstring>
#include <set>

#include <ATen/ATen.h>

#include "core/check.h"

namespace dspark::train {

namespace fs = std::filesystem;

TensorToWrite tensor_to_write(const std::string& name, const torch::Tensor& tensor, DType dtype) {
  auto t = tensor.detach().to(at::kFloat).contiguous();
  std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
  std::span<const float> values(t.data_ptr<float>(), static_cast<size_t>(t.numel()));
  switch (dtype) {
    case DType::kF32: return make_f32_tensor(name, std::move(shape), values);
    case DType::kBF16: return make_bf16_tensor(name, std::move(shape), values);
    default: DSPARK_FAIL("tensor {}: can only write f32 or bf16, not {}", name, dtype_name(dtype));
  }
}

torch::Tensor tensor_from_store(const WeightStore& store, const std::string& name, std::span<const int64_t> expected) {
  const TensorInfo& info = store.get(name);
  std::vector<int64_t> shape = expected.empty() ? info.shape : std::vector<int64_t>(expected.begin(), expected.end());
  std::vector<float> values = store.load_f32(name, shape);
  return torch::from_blob(values.data(), shape, at::kFloat).clone();
}

std::vector<TensorToWrite> model_tensors(const CausalLmImpl& model, DType dtype) {
  std::vector<TensorToWrite> out;
  for (const auto& item : model.named_parameters()) out.push_back(tensor_to_write(item.key(), item.value(), dtype));
  return out;
}

void load_hf_weights(CausalLmImpl& model, const WeightStore& store) {
  at::NoGradGuard no_grad;
  std::set<std::string> used;
  for (auto& item : model.named_parameters()) {
    auto& p = item.value();
    std::vector<int64_t> shape(p.sizes().begin(), p.sizes().end());
    p.copy_(tensor_from_store(store, item.key(), shape));
    used.insert(item.key());
  }
  for (const auto& name : store.names()) {
    if (used.count(name)) continue;
    const bool ignorable = name.ends_with("rotary_emb.inv_freq") ||
                           (name == "lm_head.weight" && model.config().tie_word_embeddings);
    DSPARK_CHECK(ignorable, "weights: tensor '{}' has no place in this {}-layer {} model", name,
                 model.config().num_hidden_layers, model_type_to_string(model.config().model_type));
  }
}

std::shared_ptr<CausalLmImpl> load_hf_model(const fs::path& dir) {
  auto model = std::make_shared<CausalLmImpl>(ModelConfig::from_file(dir));
  load_hf_weights(*model, WeightStore(dir));
  model->eval();
  return model;
}

torch::Tensor hf_logits(const CausalLmImpl& model, std::span<const int32_t> tokens) {
  at::NoGradGuard no_grad;
  std::vector<int64_t> ids(tokens.begin(), tokens.end());
  auto input = torch::from_blob(ids.data(), {1, static_cast<int64_t>(ids.size())}, at::kLong).clone();
  return model.forward(input).logits.squeeze(0).to(at::kFloat);
}

torch::Tensor hf_logits(const fs::path& dir, std::span<const int32_t> tokens) {
  return hf_logits(*load_hf_model(dir), tokens);
}

}  // namespace dspark::train
