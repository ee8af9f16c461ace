// AdamW with decoupled weight decay (the torch.optim.AdamW update, written out so that its
// state is a plain set of named tensors a checkpoint can store and restore exactly).
//
// Weight decay applies to matrices only (dim >= 2: projections and embeddings); norms and
// biases are not decayed. Gradients come from each parameter's .grad(); parameters without
// a gradient are skipped for that step.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

namespace dspark::train {

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
};

class AdamW {
 public:
  AdamW(std::vector<std::pair<std::string, torch::Tensor>> named_params, AdamWOptions options);

  // lr is the schedule's rate; a parameter whose rate was scaled (scale_lr) moves at lr × its
  // scale, its weight decay included (as a torch parameter group with its own lr would).
  void step(double lr);
  // Scales the learning rate of every parameter whose name `selects`; returns how many.
  // Not part of state(): a resumed run sets it again from its options.
  int64_t scale_lr(const std::function<bool(const std::string&)>& selects, double factor);
  void zero_grad();
  // Scales gradients so that their global L2 norm is at most max_norm (no-op when
  // max_norm <= 0); returns the norm before clipping.
  double clip_grad_norm(double max_norm);

  int64_t num_steps() const { return num_steps_; }
  // "exp_avg.<param>" and "exp_avg_sq.<param>" for every parameter, in parameter order.
  std::vector<std::pair<std::string, torch::Tensor>> state() const;
  // Restores what state() returned (every tensor must be present with the right shape).
  void load_state(const std::map<std::string, torch::Tensor>& state, int64_t num_steps);

 private:
  struct Slot {
    std::string name;
    torch::Tensor param;
    torch::Tensor exp_avg;     // same shape as param, f32
    torch::Tensor exp_avg_sq;  // same shape as param, f32
    bool decay = false;
    double lr_scale = 1.0;
  };
  std::vector<Slot> slots_;
  AdamWOptions options_;
  int64_t num_steps_ = 0;
};

}  // namespace dspark::train
