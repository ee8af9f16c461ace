// What the packed matmul classes (bf16, f32, int8 weights) share at construction (internal
// to kernels/): their argument checks, their zero-padded bias, and (bf16 and f32) the walk
// that lays weights out in 16-output x 32-column tiles.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>

#include "core/aligned_buffer.h"
#include "core/check.h"
#include "kernels/isa/bf16_kernels.h"

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

// weight ([out, in] f32, row-major) in the tile layout of kernels/isa/bf16_kernels.h, as T:
// [groups][padded_in / 32][blocks <= 4][16 k-pairs] of 32 values, zero where out or in run
// out. convert(w, n) is the stored value of w, a weight of output n; slot(lane, e) its place among its k-pair's 32
// values (lane = output within the block, e = 0 for the even k, 1 for the odd).
template <typename T, typename Convert, typename Slot>
std::shared_ptr<const AlignedBuffer> pack_tiles(const float* weight, int64_t out, int64_t in, Convert convert,
                                                Slot slot) {
  const int64_t num_chunks = (in + kBf16Chunk - 1) / kBf16Chunk;
  const int64_t num_groups = (out + kBf16Group - 1) / kBf16Group;
  int64_t total = 0;  // elements
  for (int64_t g = 0; g < num_groups; ++g) total += num_chunks * bf16_blocks_in_group(g, out) * kBf16TileElems;
  auto packed = std::make_shared<AlignedBuffer>(AlignedBuffer::in_huge_pages(static_cast<size_t>(total) * sizeof(T)));
  T* dst = packed->as<T>();  // zero-initialised: padding outputs/columns stay 0
  for (int64_t g = 0; g < num_groups; ++g) {
    const int64_t blocks = bf16_blocks_in_group(g, out);
    for (int64_t ch = 0; ch < num_chunks; ++ch)
      for (int64_t b = 0; b < blocks; ++b)
        for (int64_t i = 0; i < kBf16ChunkPairs; ++i)
          for (int64_t lane = 0; lane < kBf16Block; ++lane)
            for (int64_t e = 0; e < 2; ++e) {
              const int64_t n = g * kBf16Group + b * kBf16Block + lane;
              const int64_t k = ch * kBf16Chunk + 2 * i + e;
              if (n < out && k < in)
                dst[((ch * blocks + b) * kBf16ChunkPairs + i) * 2 * kBf16Block + slot(lane, e)] =
                    convert(weight[n * in + k], n);
            }
    dst += num_chunks * blocks * kBf16TileElems;
  }
  return packed;
}

}  // namespace dspark::kernels
