// bf16 or f32 weights multiplied with 512-bit FMA (AVX-512F). For bf16 weights, on CPUs
// whose vdpbf16ps runs at half the f32 FMA rate this is the faster small-M kernel: widening
// a 32-value weight vector costs two integer ops and feeds 2 x rows FMAs.
#include <immintrin.h>

#include <algorithm>

#include "kernels/isa/bf16_kernels.h"
#include "kernels/isa/f32_kernels.h"
#include "kernels/isa/group_walk.h"
#include "kernels/isa/prefetch.h"
#include "kernels/isa/row_spans.h"
#include "kernels/isa/tile_table.h"
#include "kernels/simd.h"

namespace dspark::kernels {
namespace {

constexpr int64_t kPrefetchChunks = 4;  // 4-16 KB ahead
constexpr int kMaxRows = 5;  // 5 rows x 4 blocks = 20 accumulators + 8 widened weights (of 32 zmm)
// 6 to 12 rows (verification steps, drafter blocks) run as half-group tiles instead: 12 rows
// x 2 blocks = 24 accumulators + 4 widened weights. Every row of the step then shares one read
// of the weights, at 2 widening ops per 2 x rows FMAs (9 rows: 36 FMAs per 40 ops, against
// 72 per 88 as 5 + 4 rows of whole groups over spans). Measured on an Intel Xeon, 3072 x 512,
// against whole-group tiles with the same prefetches: bf16 6-12 rows 12-16% faster in cache,
// 2-19% streamed; f32 25-37% and 20-30%. Beyond 12 rows (two such tiles over spans) no gain.
constexpr int kMaxHalfGroupRows = 12;
constexpr int kHalfGroupBlocks = kBf16GroupBlocks / 2;


// The 16 even-k and 16 odd-k weights of one block's k-pair, from its 32 stored values: bf16
// pairs interleaved per output (kernels/isa/bf16_kernels.h), or f32 evens then odds
// (kernels/isa/f32_kernels.h).
inline void load_pair(const uint16_t* p, __m512& even, __m512& odd) {
  const __m512i v = _mm512_loadu_si512(p);
  even = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
  odd = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
}
inline void load_pair(const float* p, __m512& even, __m512& odd) {
  even = _mm512_loadu_ps(p);
  odd = _mm512_loadu_ps(p + kBf16Block);
}

// kRows x kBlocks outputs of one group over chunks [ch0, ch1). x: [kRows, ldx] f32; w: the
// group's tiles at chunk 0 (chunk_stride weights between chunks); partial: [kRows][64] f32
// sums carried between spans (kernels/isa/row_spans.h); y row stride ldy; the last block
// stores last_mask lanes. Per k-pair the kBlocks weight vectors are widened once and each
// row's two broadcasts feed 2 x kBlocks FMAs (the broadcasts are loads: shared, they keep
// the load ports below the FMA rate).
template <typename W, int kRows, int kBlocks>
void tile(const float* x, int64_t ldx, const W* w, int64_t chunk_stride, int64_t ch0, int64_t ch1,
          int64_t num_chunks, float* partial, const float* bias, float* y, int64_t ldy, __mmask16 last_mask) {
  __m512 acc[kRows][kBlocks];
  #pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r)
    #pragma GCC unroll 16
    for (int b = 0; b < kBlocks; ++b)
      acc[r][b] = ch0 == 0 ? _mm512_setzero_ps() : _mm512_load_ps(partial + r * kBf16Group + b * kBf16Block);
  for (int64_t ch = ch0; ch < ch1; ++ch) {
    const W* wc = w + ch * chunk_stride;
    const float* xc = x + ch * kBf16Chunk;
    // Ask for the chunk kPrefetchChunks ahead (fma_tile_prefetches says when), a share of its
    // lines per k-pair (kernels/isa/prefetch.h).
    const W* ahead = wc + kPrefetchChunks * chunk_stride;
    for (int64_t i = 0; i < kBf16ChunkPairs; ++i) {
      if constexpr (fma_tile_prefetches(kRows, sizeof(W)))
        prefetch_step<kBlocks * kBf16TileElems * int64_t{sizeof(W)}, kBf16ChunkPairs>(ahead, i);
      __m512 even[kBlocks], odd[kBlocks];
      #pragma GCC unroll 16
      for (int b = 0; b < kBlocks; ++b) load_pair(wc + b * kBf16TileElems + i * 2 * kBf16Block, even[b], odd[b]);
      #pragma GCC unroll 16
      for (int r = 0; r < kRows; ++r) {
        const __m512 xe = _mm512_set1_ps(xc[r * ldx + 2 * i]);
        const __m512 xo = _mm512_set1_ps(xc[r * ldx + 2 * i + 1]);
        #pragma GCC unroll 16
        for (int b = 0; b < kBlocks; ++b) {
          acc[r][b] = _mm512_fmadd_ps(xe, even[b], acc[r][b]);
          acc[r][b] = _mm512_fmadd_ps(xo, odd[b], acc[r][b]);
        }
      }
    }
  }
  if (ch1 < num_chunks) {
    #pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r)
      #pragma GCC unroll 16
      for (int b = 0; b < kBlocks; ++b) _mm512_store_ps(partial + r * kBf16Group + b * kBf16Block, acc[r][b]);
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

// The tile instantiations for weights of type W, for tile_for (kernels/isa/tile_table.h).
template <typename W>
struct Tiles {
  using Fn = void (*)(const float*, int64_t, const W*, int64_t, int64_t, int64_t, int64_t, float*, const float*,
                      float*, int64_t, __mmask16);
  template <int kRows, int kBlocks>
  static constexpr Fn run = tile<W, kRows, kBlocks>;
};

// dst[0, n) = src[0, n) rounded to bf16, as f32.
void round_row(const float* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = simd::lanes(n - i);
    _mm512_mask_storeu_ps(dst + i, m, simd::round_to_bf16(_mm512_maskz_loadu_ps(m, src + i)));
  }
}

// y = x · Wᵀ + bias over packed tiles of type W; x: [rows, padded_in] f32, zero in
// columns >= in (bf16: already rounded).
template <typename W>
void gemm(const W* tiles, const float* bias, int64_t out, int64_t in, int64_t padded_in, int64_t num_groups,
          const float* scratch, float* y, int64_t rows) {
  const int64_t ldx = padded_in;
  const int64_t num_chunks = padded_in / kBf16Chunk;
  for_each_group(tiles, out, in, padded_in, num_groups, rows,
                 [&](int64_t, const W* wg, int64_t col, int64_t blocks) {
    const __mmask16 last_mask = simd::lanes(out - col - (blocks - 1) * kBf16Block);
    if (rows > kMaxRows && rows <= kMaxHalfGroupRows) {
      // One tile per half group over all chunks; partial is unused (ch1 == num_chunks).
      for (int64_t b0 = 0; b0 < blocks; b0 += kHalfGroupBlocks) {
        const int64_t n = std::min<int64_t>(kHalfGroupBlocks, blocks - b0);
        tile_for<Tiles<W>, kMaxHalfGroupRows, kHalfGroupBlocks>(rows, n)(
            scratch, ldx, wg + b0 * kBf16TileElems, blocks * kBf16TileElems, 0, num_chunks, num_chunks, nullptr,
            bias + col + b0 * kBf16Block, y + col + b0 * kBf16Block, out,
            b0 + n == blocks ? last_mask : static_cast<__mmask16>(0xffff));
      }
      return;
    }
    for_each_row_tile<kMaxRows, kBf16Group>(rows, num_chunks, [&](int64_t r, int64_t n, int64_t ch0, int64_t ch1, float* partial) {
      tile_for<Tiles<W>, kMaxRows, kBf16GroupBlocks>(n, blocks)(scratch + r * ldx, ldx, wg, blocks * kBf16TileElems,
                                                                ch0, ch1, num_chunks, partial, bias + col,
                                                                y + r * out + col, out, last_mask);
    });
  });
}

}  // namespace

void bf16_gemm_fma512(const PackedBf16View& w, const float* x, float* scratch, float* y, int64_t rows) {
  for (int64_t r = 0; r < rows; ++r) round_row(x + r * w.in, scratch + r * w.padded_in, w.in);
  gemm(w.tiles, w.bias, w.out, w.in, w.padded_in, w.num_groups, scratch, y, rows);
}

void f32_gemm_fma512(const PackedF32View& w, const float* x, float* y, int64_t rows) {
  gemm(w.tiles, w.bias, w.out, w.in, w.padded_in, w.num_groups, x, y, rows);
}

}  // namespace dspark::kernels
