// Growing a trained drafter: more decoder layers and a larger Markov rank, starting from
// exactly the function the smaller drafter computes.
//
// A capacity ablation that trains each larger shape from scratch pays the whole budget again
// before it even reaches the small drafter; grown from it, the larger shape starts where the
// small one stands and every further step measures what the extra capacity adds, on the
// same batches (they are pure in (seed, step)).
//
// grow_drafter() copies every source parameter into the leading slice of the grown one's and
// makes the additions inert:
//   - layers appended after the source's: random like a fresh drafter's, except o_proj and
//     down_proj, which are zero, so the layer adds nothing to the residual stream until
//     they learn (q/k/v/gate/up receive gradient once o_proj/down_proj leave zero);
//   - Markov columns r0 .. r−1: W₁ random, W₂ zero, so W₂·W₁[x] is unchanged;
//   - a contextual Markov head on a vanilla one (or a wider one): W_in random, W_out zero
//     (its new rows and columns when widened), W_in's columns of new Markov ranks zero, so
//     f_j is unchanged;
//   - the confidence weights of those columns zero, so z_j is unchanged;
//   - aux layers appended after the source's: their fc columns zero, so ctx is unchanged.
// Block states are then equal bit for bit (x + 0 is exact); logits and z_j up to the
// summation order of the longer Markov dot products.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace dspark::train {

class DrafterImpl;

struct DrafterGrowth {
  int64_t layers = 0;       // draft decoder layers, >= the source's
  int64_t markov_rank = 0;  // DSpark Markov rank, >= the source's (a head cannot be added: the
                            // confidence head's inputs would change meaning)
  int64_t markov_context_size = 0;  // contextual Markov head width, >= the source's (0: the source's;
                                    // > 0 on a vanilla head makes it contextual)
  std::vector<int32_t> aux_layer_ids;  // the source's aux ids followed by more (empty: the source's)
};

// The grown drafter (shares the source's embedding and LM head tables); throws naming the
// field when `to` would shrink the source or add a Markov head to one without it.
std::shared_ptr<DrafterImpl> grow_drafter(const DrafterImpl& source, const DrafterGrowth& to, double init_std,
                                          uint64_t seed);

}  // namespace dspark::train
