// Fixtures of the DSpark proposer's tests: a random tiny target with a random DSpark or
// DFlash drafter beside it, the proposer options they run with, random target hidden states
// and tokens, showing context to a proposer the way the engine does, and the tolerances of
// the proposer against the scalar reference drafter (spec/reference_drafter.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "kernels/packed_bf16_gemm.h"
#include "kernels/sampling.h"
#include "loader/config.h"
#include "spec/drafter_config.h"
#include "spec/dspark_proposer.h"

namespace dspark::testing {

struct DrafterSetup {
  std::filesystem::path target_dir, drafter_dir;
  DrafterConfig config;
  ModelConfig target;
};

// A 3-layer target and a 2-layer drafter (aux layers 1 and 3, block 4) written under
// temporary directories named after `name`; markov_context_size > 0: a contextual Markov head.
DrafterSetup make_setup(DrafterKind kind, const std::string& name, bool own_embeddings = false, bool tied_target = false,
                        int64_t markov_context_size = 0);
// One shared setup per kind, written on first use.
const DrafterSetup& setup(DrafterKind kind);

DSparkProposerOptions proposer_options(DType compute);
std::unique_ptr<DSparkProposer> make_proposer(const DrafterSetup& s, DType compute, int64_t max_context_rows = 64,
                                              int64_t max_pending_positions = -1, int64_t context_window = 0);

// Random target hidden states of one sequence: [aux layers][positions * hidden].
std::vector<std::vector<float>> random_context(const DrafterSetup& s, int64_t positions, uint64_t seed);
// Shows positions [start, start + count) of ctx to the proposer's slot, the way the engine
// does: rows of every captured layer, layer_stride apart.
void observe(DSparkProposer& p, int32_t slot, const std::vector<std::vector<float>>& ctx, int32_t start,
             int32_t count);
std::vector<int32_t> random_tokens(int64_t n, uint64_t seed);
// Temperature 1, position-keyed draws with the given seed.
SamplingParams position_keyed_params(uint64_t seed);
SamplingParams greedy_params();

struct Tolerance {
  double hidden, logits, confidence;
};
// f32: only summation order differs from the double-accumulating reference (measured
// worst: hidden 2e-6, logits 1.2e-5).
inline constexpr Tolerance kF32{2e-4, 1e-3, 1e-5};
// bf16: both sides round every matmul operand to bf16 (products are then exact in f32), so
// differences start as accumulation order only (measured worst 5e-7); the tolerance leaves
// room for an activation whose bf16 rounding flips between the two (~0.4% of one element).
inline constexpr Tolerance kBF16{1e-2, 2e-2, 1e-3};
// bf16 on the fp16 matmul kernel (kernels/packed_bf16_gemm.h), whose fp16 sums the reference
// does not model: they add about 1e-3 of a product's outputs (measured worst over the three
// drafters: hidden 0.016, logits 0.036, confidences 0.0019), about 2x left.
inline constexpr Tolerance kBF16Fp16Sums{3e-2, 7e-2, 4e-3};
// The bf16 tolerance for the matmul kernel this process runs.
inline Tolerance bf16_tolerance() { return best_bf16_kernel() == Bf16Kernel::kFp16 ? kBF16Fp16Sums : kBF16; }

}  // namespace dspark::testing
