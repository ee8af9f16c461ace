// The f32-weight matmul kernels (internal to kernels/): the same groups, chunks, blocks
// and FMA chains as the bf16 kernels' f32 paths (kernels/isa/bf16_kernels.h), on weights
// kept in f32.
//
// Packed layout: [groups][padded_in / 32][blocks <= 4] tiles of 512 f32, as for bf16; within
// a tile, k-pair i holds its 16 even-k weights, then its 16 odd-k weights: [16][2][16].
// Every output is one f32 fused multiply-add chain over k = 0, 1, 2, ... then + bias, so
// row r never depends on M, the row tiling or the thread count.
#pragma once

#include <cstdint>

#include "kernels/isa/bf16_kernels.h"

namespace dspark::kernels {

// A packed f32 weight matrix as the kernels see it.
struct PackedF32View {
  const float* tiles;  // [groups][padded_in / 32][blocks <= 4][16][2][16] f32
  const float* bias;   // [num_groups * 64] f32, zero beyond out (and when no bias)
  int64_t out;
  int64_t in;
  int64_t padded_in;   // in rounded up to 32
  int64_t num_groups;
};

// x: [rows, padded_in] f32, zero in columns >= in; y: [rows, out] f32.
void f32_gemm_fma256(const PackedF32View& w, const float* x, float* y, int64_t rows);
void f32_gemm_fma512(const PackedF32View& w, const float* x, float* y, int64_t rows);

}  // namespace dspark::kernels
