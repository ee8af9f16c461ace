#include "kernels/packed_bf16_gemm.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "core/dtype.h"

#ifdef __AVX512BF16__
#include <immintrin.h>
#endif

namespace dspark {
namespace {

constexpr int64_t kBlock = 16;        // outputs per vector
constexpr int64_t kGroupBlocks = 4;   // blocks per group: 64 outputs, one weight stream
constexpr int64_t kGroup = kBlock * kGroupBlocks;
constexpr int kMaxTileRows = 6;       // 6 rows x 4 blocks = 24 accumulators (of 32 zmm)
// Below this many multiply-adds a call runs on the calling thread: waking the OpenMP team
// costs more than it saves (measured with bench/kernels_bench.cpp).
constexpr int64_t kParallelMinMacs = int64_t{1} << 17;

int64_t blocks_in_group(int64_t group, int64_t out) {
  const int64_t remaining = out - group * kGroup;
  return std::min<int64_t>(kGroupBlocks, (remaining + kBlock - 1) / kBlock);
}

#ifdef __AVX512BF16__

// rows x blocks tile of one group: x [rows, ldx] bf16, w: the group's packed stream.
template <int kRows, int kBlocks>
void tile(const uint16_t* x, int64_t ldx, const uint16_t* w, int64_t num_pairs, const float* bias,
          float* y, int64_t ldy, __mmask16 last_mask) {
  __m512 acc[kRows][kBlocks];
  for (int r = 0; r < kRows; ++r)
    for (int b = 0; b < kBlocks; ++b) acc[r][b] = _mm512_setzero_ps();
  for (int64_t kp = 0; kp < num_pairs; ++kp) {
    __m512bh wv[kBlocks];
    for (int b = 0; b < kBlocks; ++b)
      wv[b] = (__m512bh)_mm512_loadu_si512(w + (kp * kBlocks + b) * 2 * kBlock);
    for (int r = 0; r < kRows; ++r) {
      int32_t pair;
      std::memcpy(&pair, x + r * ldx + 2 * kp, sizeof(pair));
      const __m512bh xv = (__m512bh)_mm512_set1_epi32(pair);
      for (int b = 0; b < kBlocks; ++b) acc[r][b] = _mm512_dpbf16_ps(acc[r][b], xv, wv[b]);
    }
  }
  for (int b = 0; b < kBlocks; ++b) {
    const __m512 bv = _mm512_loadu_ps(bias + b * kBlock);
    const __mmask16 m = b == kBlocks - 1 ? last_mask : static_cast<__mmask16>(0xffff);
    for (int r = 0; r < kRows; ++r)
      _mm512_mask_storeu_ps(y + r * ldy + b * kBlock, m, _mm512_add_ps(acc[r][b], bv));
  }
}

using TileFn = void (*)(const uint16_t*, int64_t, const uint16_t*, int64_t, const float*, float*,
                        int64_t, __mmask16);

template <int kRows>
constexpr TileFn tile_for_blocks(int64_t blocks) {
  switch (blocks) {
    case 1: return tile<kRows, 1>;
    case 2: return tile<kRows, 2>;
    case 3: return tile<kRows, 3>;
    default: return tile<kRows, 4>;
  }
}

TileFn tile_fn(int64_t rows, int64_t blocks) {
  switch (rows) {
    case 1: return tile_for_blocks<1>(blocks);
    case 2: return tile_for_blocks<2>(blocks);
    case 3: return tile_for_blocks<3>(blocks);
    case 4: return tile_for_blocks<4>(blocks);
    case 5: return tile_for_blocks<5>(blocks);
    default: return tile_for_blocks<6>(blocks);
  }
}

#endif  // __AVX512BF16__

}  // namespace

PackedBf16Gemm::PackedBf16Gemm(const float* weight, int64_t out_features, int64_t in_features,
                               std::span<const float> bias)
    : out_(out_features),
      in_(in_features),
      padded_in_((in_features + 1) / 2 * 2),
      num_groups_((out_features + kGroup - 1) / kGroup) {
  DSPARK_CHECK(out_ > 0 && in_ > 0, "PackedBf16Gemm: bad shape [{}, {}]", out_, in_);
  DSPARK_CHECK(bias.empty() || static_cast<int64_t>(bias.size()) == out_,
               "PackedBf16Gemm: bias has {} values, expected {}", bias.size(), out_);
  const int64_t num_pairs = padded_in_ / 2;
  int64_t total = 0;  // bf16 elements
  for (int64_t g = 0; g < num_groups_; ++g) total += num_pairs * blocks_in_group(g, out_) * 2 * kBlock;
  packed_ = AlignedBuffer(static_cast<size_t>(total) * sizeof(uint16_t));
  uint16_t* dst = packed_.as<uint16_t>();  // zero-initialised: padding outputs/columns stay 0
  for (int64_t g = 0; g < num_groups_; ++g) {
    const int64_t blocks = blocks_in_group(g, out_);
    for (int64_t kp = 0; kp < num_pairs; ++kp)
      for (int64_t b = 0; b < blocks; ++b)
        for (int64_t lane = 0; lane < kBlock; ++lane) {
          const int64_t n = g * kGroup + b * kBlock + lane;
          for (int64_t e = 0; e < 2; ++e) {
            const int64_t k = 2 * kp + e;
            if (n < out_ && k < in_) dst[((kp * blocks + b) * kBlock + lane) * 2 + e] =
                float_to_bf16(weight[n * in_ + k]);
          }
        }
    dst += num_pairs * blocks * 2 * kBlock;
  }
  bias_ = AlignedBuffer(static_cast<size_t>(num_groups_ * kGroup) * sizeof(float));
  if (!bias.empty()) std::memcpy(bias_.data(), bias.data(), bias.size() * sizeof(float));
}

void PackedBf16Gemm::multiply(const uint16_t* x, float* y, int64_t num_rows) const {
  const int64_t num_pairs = padded_in_ / 2;
  const int64_t group_elems = num_pairs * kGroupBlocks * 2 * kBlock;  // of every full group
  const uint16_t* packed = packed_.as<uint16_t>();
  const float* bias = bias_.as<float>();
  const int64_t out = out_;
  const int64_t ldx = padded_in_;
  const int64_t num_groups = num_groups_;
  const bool parallel = num_rows * out_ * in_ >= kParallelMinMacs;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t g = 0; g < num_groups; ++g) {
    const int64_t blocks = blocks_in_group(g, out);
    const uint16_t* w = packed + g * group_elems;
    const int64_t col = g * kGroup;
    const int64_t valid_last = out - col - (blocks - 1) * kBlock;  // 1..16
#ifdef __AVX512BF16__
    const __mmask16 last_mask =
        valid_last >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << valid_last) - 1u);
    // Rows in tiles of up to kMaxTileRows; the group's weights (64 x in bf16) stay in L2
    // across the row tiles, so W is read from memory once per call.
    for (int64_t r = 0; r < num_rows; r += kMaxTileRows) {
      const int64_t rows = std::min<int64_t>(kMaxTileRows, num_rows - r);
      tile_fn(rows, blocks)(x + r * ldx, ldx, w, num_pairs, bias + col, y + r * out + col, out, last_mask);
    }
#else
    // Portable path with the same per-output chain (products of bf16 values are exact in f32).
    for (int64_t r = 0; r < num_rows; ++r)
      for (int64_t b = 0; b < blocks; ++b)
        for (int64_t lane = 0; lane < (b == blocks - 1 ? valid_last : kBlock); ++lane) {
          float acc = 0.0f;
          for (int64_t kp = 0; kp < num_pairs; ++kp) {
            const uint16_t* wp = w + ((kp * blocks + b) * kBlock + lane) * 2;
            acc += bf16_to_float(x[r * ldx + 2 * kp + 1]) * bf16_to_float(wp[1]);
            acc += bf16_to_float(x[r * ldx + 2 * kp]) * bf16_to_float(wp[0]);
          }
          y[r * out + col + b * kBlock + lane] = acc + bias[col + b * kBlock + lane];
        }
#endif
  }
}

}  // namespace dspark
