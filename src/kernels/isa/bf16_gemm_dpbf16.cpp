// bf16 weights and inputs multiplied in pairs with AVX512_BF16 vdpbf16ps.
#include <immintrin.h>

#include <cstring>

#include "kernels/isa/bf16_kernels.h"
#include "kernels/isa/group_walk.h"
#include "kernels/isa/prefetch.h"
#include "kernels/isa/row_spans.h"
#include "kernels/isa/tile_table.h"
#include "kernels/simd.h"

namespace dspark::kernels {
namespace {

constexpr int64_t kPrefetchChunks = 4;  // 4-16 KB ahead
constexpr int kMaxRows = 6;  // 6 rows x 4 blocks = 24 accumulators (of 32 zmm)


// kRows x kBlocks outputs of one group over chunks [ch0, ch1): x [kRows, ldx] bf16; w: the
// group's packed tiles ([chunks][kBlocks][16 kp][16][2]). The sums start from zero at
// chunk 0 and from `partial` ([kRows][kBlocks][16] f32) otherwise; they end in `partial`
// unless ch1 is the last chunk, where bias is added and y (row stride ldy) stored, the
// last block with last_mask lanes (kernels/isa/row_spans.h).
template <int kRows, int kBlocks>
void tile(const uint16_t* x, int64_t ldx, const uint16_t* w, int64_t ch0, int64_t ch1, int64_t num_chunks,
          float* partial, const float* bias, float* y, int64_t ldy, __mmask16 last_mask) {
  __m512 acc[kRows][kBlocks];
  #pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r)
    #pragma GCC unroll 16
    for (int b = 0; b < kBlocks; ++b)
      acc[r][b] = ch0 == 0 ? _mm512_setzero_ps() : _mm512_load_ps(partial + (r * kBlocks + b) * kBf16Block);
  for (int64_t ch = ch0; ch < ch1; ++ch) {
    const uint16_t* wc = w + ch * kBlocks * kBf16TileElems;
    // Weights stream from memory once per call: ask for the chunk kPrefetchChunks ahead, a
    // share of its lines per k-pair (kernels/isa/prefetch.h); tiles of several rows only (at
    // one row the hardware prefetcher keeps up: measured on Zen 5 with the asks at the chunk's
    // start, 2 chunks ahead gained nothing, 4 or 8 cost 5-10%).
    const uint16_t* ahead = wc + kPrefetchChunks * kBlocks * kBf16TileElems;
    for (int64_t i = 0; i < kBf16ChunkPairs; ++i) {
      if constexpr (kRows > 1) prefetch_step<kBlocks * kBf16TileElems * 2, kBf16ChunkPairs>(ahead, i);
      __m512bh wv[kBlocks];
      #pragma GCC unroll 16
      for (int b = 0; b < kBlocks; ++b)
        wv[b] = (__m512bh)_mm512_loadu_si512(wc + b * kBf16TileElems + i * 2 * kBf16Block);
      #pragma GCC unroll 16
      for (int r = 0; r < kRows; ++r) {
        int32_t pair;
        std::memcpy(&pair, x + r * ldx + ch * kBf16Chunk + 2 * i, sizeof(pair));
        const __m512bh xv = (__m512bh)_mm512_set1_epi32(pair);
        #pragma GCC unroll 16
        for (int b = 0; b < kBlocks; ++b) acc[r][b] = _mm512_dpbf16_ps(acc[r][b], xv, wv[b]);
      }
    }
  }
  if (ch1 < num_chunks) {
    #pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r)
      #pragma GCC unroll 16
      for (int b = 0; b < kBlocks; ++b) _mm512_store_ps(partial + (r * kBlocks + b) * kBf16Block, acc[r][b]);
    return;
  }
  #pragma GCC unroll 16
  for (int b = 0; b < kBlocks; ++b) {
    const __m512 bv = _mm512_loadu_ps(bias + b * kBf16Block);
    const __mmask16 m = b == kBlocks - 1 ? last_mask : static_cast<__mmask16>(0xffff);
    #pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r)
      _mm512_mask_storeu_ps(y + r * ldy + b * kBf16Block, m, _mm512_add_ps(acc[r][b], bv));
  }
}

// The tile instantiations, for tile_for (kernels/isa/tile_table.h).
struct Tiles {
  using Fn = void (*)(const uint16_t*, int64_t, const uint16_t*, int64_t, int64_t, int64_t, float*, const float*,
                      float*, int64_t, __mmask16);
  template <int kRows, int kBlocks>
  static constexpr Fn run = tile<kRows, kBlocks>;
};

}  // namespace

void bf16_gemm_dpbf16(const PackedBf16View& w, const float* x, uint16_t* scratch, float* y, int64_t rows) {
  const int64_t ldx = w.padded_in;
  for (int64_t r = 0; r < rows; ++r) simd::f32_to_bf16_avx512(x + r * w.in, scratch + r * ldx, w.in);
  const int64_t num_chunks = w.padded_in / kBf16Chunk;
  for_each_group(w.tiles, w.out, w.in, w.padded_in, w.num_groups, rows,
                 [&](int64_t, const uint16_t* wg, int64_t col, int64_t blocks) {
    const __mmask16 last_mask = simd::lanes(w.out - col - (blocks - 1) * kBf16Block);
    for_each_row_tile<kMaxRows, kBf16Group>(rows, num_chunks, [&](int64_t r, int64_t n, int64_t ch0, int64_t ch1, float* partial) {
      tile_for<Tiles, kMaxRows, kBf16GroupBlocks>(n, blocks)(scratch + r * ldx, ldx, wg, ch0, ch1, num_chunks, partial,
                                                             w.bias + col, y + r * w.out + col, w.out, last_mask);
    });
  });
}

}  // namespace dspark::kernels
