// The hand-written bf16 matrix product behind LinearBackend::kPackedBf16 (internal).
//
// y[M, out] = x[M, in] · Wᵀ + bias with x and W in bf16 and f32 accumulation. W is packed
// once into groups of 64 outputs: group g holds, for each pair of input columns kp, the
// 16x2 bf16 tiles of its (up to) four 16-output blocks — [groups][in/2][blocks][16][2] —
// the operand layout of vdpbf16ps, read as one contiguous stream per group.
//
// Reduction order (the batch-invariance contract): every output y[r, n] is a single f32
// accumulator chain acc = dpbf16(acc, x[r, 2kp..2kp+1], W[n, 2kp..2kp+1]) for kp = 0, 1, ...
// in order, then + bias[n]. Row tiles (up to 6 rows) and thread splits (over groups) change
// only which registers hold the chains, never the chain itself.
#pragma once

#include <cstdint>
#include <span>

#include "core/aligned_buffer.h"

namespace dspark {

class PackedBf16Gemm {
 public:
  // weight: [out_features, in_features] f32; bias: [out_features] or empty.
  PackedBf16Gemm(const float* weight, int64_t out_features, int64_t in_features,
                 std::span<const float> bias);

  // Row stride of the bf16 input this kernel reads: in_features rounded up to even.
  int64_t padded_in() const { return padded_in_; }
  size_t weight_bytes() const { return packed_.size(); }

  // x: [num_rows, padded_in()] bf16 bits, zero in the padding column; y: [num_rows, out] f32.
  void multiply(const uint16_t* x, float* y, int64_t num_rows) const;

 private:
  int64_t out_;
  int64_t in_;
  int64_t padded_in_;
  int64_t num_groups_;
  AlignedBuffer packed_;  // [groups][padded_in / 2][blocks <= 4][16][2] bf16
  AlignedBuffer bias_;    // [num_groups * 64] f32, zero beyond out_ (and when no bias)
};

}  // namespace dspark
