// The hand-written bf16 matrix product behind LinearBackend::kPackedBf16 (internal).
//
// y[M, out] = x[M, in] · Wᵀ + bias with x and W in bf16 and f32 accumulation. W is packed
// once into groups of 64 outputs (four 16-output blocks); within a group, k runs in chunks
// of 32 columns and each (chunk, block) is one contiguous 1 KB tile of 16 k-pairs x 16
// outputs x 2: [groups][chunks][blocks][16][16][2]. That is the B operand of AMX tdpbf16ps
// as is, and 16 consecutive vdpbf16ps operands; a group is read front to back.
//
// Two instruction sets, one chosen per process (kBest: AMX when the CPU and kernel allow
// it, else AVX-512 BF16). Within one, the reduction order is fixed — the batch-invariance
// contract:
//  - AVX-512: every output y[r, n] is one f32 chain of vdpbf16ps over kp = 0, 1, ... in
//    order, then + bias[n].
//  - AMX: every output is one f32 tile accumulator updated by tdpbf16ps over the 32-column
//    chunks of k in order, then + bias[n]; a tile row depends only on its own x row.
// Row tiles and thread splits (over groups) change which registers hold the chains, never
// the chains, so row r never depends on M or on the thread count.
#pragma once

#include <cstdint>
#include <span>

#include "core/aligned_buffer.h"

namespace dspark {

enum class PackedIsa : uint8_t { kBest, kAvx512, kAmx };

// True when AMX tiles can be used in this process (CPU support + kernel permission).
bool amx_available();

class PackedBf16Gemm {
 public:
  // weight: [out_features, in_features] f32; bias: [out_features] or empty.
  // isa: kBest resolves once per process; kAmx throws when AMX is not available.
  PackedBf16Gemm(const float* weight, int64_t out_features, int64_t in_features,
                 std::span<const float> bias, PackedIsa isa = PackedIsa::kBest);

  // Row stride of the bf16 input: in_features rounded up to 32 (zero padding).
  int64_t padded_in() const { return padded_in_; }
  // Rows of input the kernel may read for `rows` rows (AMX loads 16-row tiles); the extra
  // rows' contents do not matter (their outputs are discarded).
  static int64_t padded_rows(int64_t rows) { return (rows + 15) / 16 * 16; }
  size_t weight_bytes() const { return packed_.size(); }
  PackedIsa isa() const { return isa_; }  // never kBest

  // x: [padded_rows(num_rows), padded_in()] bf16 bits, zero in the padding columns;
  // y: [num_rows, out] f32.
  void multiply(const uint16_t* x, float* y, int64_t num_rows) const;

 private:
  void multiply_avx512(const uint16_t* x, float* y, int64_t num_rows) const;
  void multiply_amx(const uint16_t* x, float* y, int64_t num_rows) const;

  int64_t out_;
  int64_t in_;
  int64_t padded_in_;
  int64_t num_groups_;
  PackedIsa isa_;
  AlignedBuffer packed_;  // [groups][padded_in / 32][blocks <= 4][16][16][2] bf16
  AlignedBuffer bias_;    // [num_groups * 64] f32, zero beyond out_ (and when no bias)
};

}  // namespace dspark
