#include "train/pretrain/adamw.h"

#include <cmath>

#include <ATen/ATen.h>
#include <fmt/ranges.h>

#include "core/check.h"

namespace dspark::train {

AdamW::AdamW(std::vector<std::pair<std::string, torch::Tensor>> named_params, AdamWOptions options)
    : options_(options) {
  for (auto& [name, p] : named_params) {
    Slot s;
    s.name = name;
    s.param = p;
    s.exp_avg = at::zeros_like(p.detach());
    s.exp_avg_sq = at::zeros_like(p.detach());
    s.decay = p.dim() >= 2;
    slots_.push_back(std::move(s));
  }
}

void AdamW::zero_grad() {
  for (auto& s : slots_) {
    auto& g = s.param.mutable_grad();
    if (g.defined()) g.zero_();
  }
}

double AdamW::clip_grad_norm(double max_norm) {
  at::NoGradGuard no_grad;
  double sum_sq = 0;
  for (auto& s : slots_) {
    const auto& g = s.param.grad();
    if (!g.defined()) continue;
    const double n = g.norm().item<double>();
    sum_sq += n * n;
  }
  const double norm = std::sqrt(sum_sq);
  if (max_norm > 0 && norm > max_norm) {
    const double scale = max_norm / (norm + 1e-6);
    for (auto& s : slots_) {
      auto& g = s.param.mutable_grad();
      if (g.defined()) g.mul_(scale);
    }
  }
  return norm;
}

void AdamW::step(double lr) {
  at::NoGradGuard no_grad;
  ++num_steps_;
  const double b1 = options_.beta1, b2 = options_.beta2;
  const double bias1 = 1.0 - std::pow(b1, static_cast<double>(num_steps_));
  const double bias2 = 1.0 - std::pow(b2, static_cast<double>(num_steps_));
  const double bias2_sqrt = std::sqrt(bias2);
  for (auto& s : slots_) {
    const auto& g = s.param.grad();
    if (!g.defined()) continue;
    auto p = s.param.detach();
    const double slot_lr = lr * s.lr_scale;
    const double step_size = slot_lr / bias1;
    if (s.decay && options_.weight_decay != 0) p.mul_(1.0 - slot_lr * options_.weight_decay);
    s.exp_avg.mul_(b1).add_(g, 1.0 - b1);
    s.exp_avg_sq.mul_(b2).addcmul_(g, g, 1.0 - b2);
    auto denom = (s.exp_avg_sq.sqrt() / bias2_sqrt).add_(options_.eps);
    p.addcdiv_(s.exp_avg, denom, -step_size);
  }
}

int64_t AdamW::scale_lr(const std::function<bool(const std::string&)>& selects, double factor) {
  DSPARK_CHECK(factor > 0 && std::isfinite(factor), "AdamW: a learning-rate scale must be > 0, got {}", factor);
  int64_t n = 0;
  for (auto& s : slots_)
    if (selects(s.name)) {
      s.lr_scale = factor;
      ++n;
    }
  return n;
}

std::vector<std::pair<std::string, torch::Tensor>> AdamW::state() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& s : slots_) {
    out.emplace_back("exp_avg." + s.name, s.exp_avg);
    out.emplace_back("exp_avg_sq." + s.name, s.exp_avg_sq);
  }
  return out;
}

void AdamW::load_state(const std::map<std::string, torch::Tensor>& state, int64_t num_steps) {
  at::NoGradGuard no_grad;
  for (auto& s : slots_) {
    const std::pair<const char*, torch::Tensor*> targets[] = {{"exp_avg.", &s.exp_avg}, {"exp_avg_sq.", &s.exp_avg_sq}};
    for (auto [key, dst] : targets) {
      const std::string name = key + s.name;
      auto it = state.find(name);
      DSPARK_CHECK(it != state.end(), "optimizer state: missing tensor '{}'", name);
      DSPARK_CHECK(it->second.sizes() == dst->sizes(), "optimizer state: '{}' has shape {}, expected {}", name,
                   fmt::join(it->second.sizes(), "x"), fmt::join(dst->sizes(), "x"));
      dst->copy_(it->second);
    }
  }
  num_steps_ = num_steps;
}

}  // namespace dspark::train
