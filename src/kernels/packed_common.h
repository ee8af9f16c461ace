// What the packed matmul classes (bf16, f32, int8 weights) share at construction (internal
// to kernels/): their argument checks and their zero-padded bias.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>

#include "core/aligned_buffer.h"
#include "core/check.h"

namespace dspark::kernels {

// Throws naming `what` (the class) for a bad shape, row count or bias length.
inline void check_packed_args(const char* what, int64_t out, int64_t in, std::span<const float> bias,
                              int64_t max_rows) {
  DSPARK_CHECK(out > 0 && in > 0, "{}: bad shape [{}, {}]", what, out, in);
  DSPARK_CHECK(max_rows >= 1, "{}: max_rows must be >= 1, got {}", what, max_rows);
  DSPARK_CHECK(bias.empty() || static_cast<int64_t>(bias.size()) == out, "{}: bias has {} values, expected {}",
               what, bias.size(), out);
}

// bias copied into [padded_out] f32, zero beyond it (all zero when there is none), so the
// kernels add a whole group's bias without a branch.
inline std::shared_ptr<const AlignedBuffer> padded_bias(std::span<const float> bias, int64_t padded_out) {
  auto padded = std::make_shared<AlignedBuffer>(static_cast<size_t>(padded_out) * sizeof(float));
  if (!bias.empty()) std::memcpy(padded->data(), bias.data(), bias.size() * sizeof(float));
  return padded;
}

}  // namespace dspark::kernels
