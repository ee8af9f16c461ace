// bf16 weights multiplied in fp16 arithmetic (AVX512-FP16). A vfmadd231ph does 32 multiply-adds
// where vfmadd231ps does 16, and it takes the stored k-pairs as they are (no widening): per
// k-pair and block one FMA feeds both k of 16 outputs, where fma512 needs two FMAs and two
// widening ops. Numerics (kernels/isa/bf16_kernels.h): every bf16 weight, scaled by a power of
// two per output, is an fp16 value exactly (fp16 carries 11 significant bits, bf16 8; only
// weights below 2^-14 of their row's largest lose bits); so is every activation, rounded to
// bf16 as for the other kernels and scaled by a power of two per row; the products are summed
// in fp16 over 64 k (32 a lane), and those partial sums in f32: only these fp16 sums round
// differently from the other kernels.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
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
constexpr int kMaxRows = 5;             // whole groups: 5 rows x 4 blocks = 20 accumulators + 4 weight vectors
constexpr int kMaxHalfGroupRows = 12;   // 6 to 12 rows: half groups, 12 x 2 = 24 accumulators + 2 weight vectors
constexpr int kHalfGroupBlocks = kBf16GroupBlocks / 2;
constexpr int64_t kLanes = 2 * kBf16Block;  // a block's fp16 lanes: its 16 outputs x the k-pair's two k
// fp16 sums run over this many chunks (32 products a lane), then go into the f32 sums. A flush
// costs 7 operations per row and block against 16 FMAs per chunk. Measured on an Intel Xeon, 9
// rows of 1536 / 3072 x 512 in cache, flushing every 1 / 2 / 4 chunks: 31 / 27 / 26 and 57 / 52
// / 50 us, the fp16 sums' RMS error 0.36 / 0.49 / 0.70x that of rounding x to bf16
// (tests/kernels/packed_bf16_gemm_test.cpp).
constexpr int64_t kFlushChunks = 2;
static_assert(kSpanChunks % kFlushChunks == 0, "a span of chunks ends where a flush falls, whatever M");
// f32 sums between spans: [rows][2 blocks][32 lanes], lanes still (output, parity) pairs.
constexpr int64_t kPartialWidth = kHalfGroupBlocks * kLanes;

// kRows x kBlocks blocks of one group over chunks [ch0, ch1). x: [kRows, ldx] fp16 (scaled by
// 2^-row_exponent[r]); w: the group's tiles at block 0, chunk 0 (chunk_stride values between
// chunks); partial: [kRows][kPartialWidth] f32 sums carried between spans (half groups only,
// kernels/isa/row_spans.h), or null when the tile runs over all chunks. y row stride ldy; the
// last block stores last_mask lanes.
template <int kRows, int kBlocks>
void tile(const uint16_t* x, const float* row_exponent, int64_t ldx, const uint16_t* w, int64_t chunk_stride,
          int64_t ch0, int64_t ch1, int64_t num_chunks, float* partial, const float* out_exponent, const float* bias,
          float* y, int64_t ldy, __mmask16 last_mask) {
  constexpr int64_t kWidth = kBlocks > kHalfGroupBlocks ? kBlocks * kLanes : kPartialWidth;
  alignas(64) float local[kRows * kWidth];
  float* sums = partial != nullptr ? partial : local;  // [kRows][kWidth] f32
  if (ch0 == 0) std::fill(sums, sums + kRows * kWidth, 0.0f);
  __m512h acc[kRows][kBlocks];
  #pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r)
    #pragma GCC unroll 16
    for (int b = 0; b < kBlocks; ++b) acc[r][b] = _mm512_setzero_ph();
  for (int64_t ch = ch0; ch < ch1; ++ch) {
    const uint16_t* wc = w + ch * chunk_stride;
    const uint16_t* xc = x + ch * kBf16Chunk;
    const uint16_t* ahead = wc + kPrefetchChunks * chunk_stride;
    for (int64_t i = 0; i < kBf16ChunkPairs; ++i) {
      prefetch_step<kBlocks * kBf16TileElems * int64_t{sizeof(uint16_t)}, kBf16ChunkPairs>(ahead, i);
      __m512h wv[kBlocks];
      #pragma GCC unroll 16
      for (int b = 0; b < kBlocks; ++b)
        wv[b] = _mm512_castsi512_ph(_mm512_loadu_si512(wc + b * kBf16TileElems + i * kLanes));
      #pragma GCC unroll 16
      for (int r = 0; r < kRows; ++r) {
        int32_t pair;  // the row's two fp16 activations of this k-pair, broadcast to every output
        std::memcpy(&pair, xc + r * ldx + 2 * i, sizeof(pair));
        const __m512h xv = _mm512_castsi512_ph(_mm512_set1_epi32(pair));
        #pragma GCC unroll 16
        for (int b = 0; b < kBlocks; ++b) acc[r][b] = _mm512_fmadd_ph(xv, wv[b], acc[r][b]);
      }
    }
    if ((ch + 1) % kFlushChunks != 0 && ch + 1 != ch1) continue;
    #pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r)
      #pragma GCC unroll 16
      for (int b = 0; b < kBlocks; ++b) {
        const __m512i a = _mm512_castph_si512(acc[r][b]);
        const __m512 lo = _mm512_cvtph_ps(_mm512_castsi512_si256(a));
        const __m512 hi = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(a, 1));
        float* s = sums + r * kWidth + b * kLanes;
        _mm512_store_ps(s, _mm512_add_ps(_mm512_load_ps(s), lo));
        _mm512_store_ps(s + 16, _mm512_add_ps(_mm512_load_ps(s + 16), hi));
        acc[r][b] = _mm512_setzero_ph();
      }
  }
  if (ch1 < num_chunks) return;  // the sums stay in partial for the next span
  // Each output's even-k and odd-k sums, scaled back by both powers of two (exact), + bias.
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  #pragma GCC unroll 16
  for (int b = 0; b < kBlocks; ++b) {
    const __m512 bv = _mm512_loadu_ps(bias + b * kBf16Block);
    const __m512 ev = _mm512_loadu_ps(out_exponent + b * kBf16Block);
    const __mmask16 m = b == kBlocks - 1 ? last_mask : static_cast<__mmask16>(0xffff);
    #pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const float* s = sums + r * kWidth + b * kLanes;
      const __m512 lo = _mm512_load_ps(s), hi = _mm512_load_ps(s + 16);
      const __m512 sum = _mm512_add_ps(_mm512_permutex2var_ps(lo, even, hi), _mm512_permutex2var_ps(lo, odd, hi));
      const __m512 scaled = _mm512_scalef_ps(sum, _mm512_add_ps(ev, _mm512_set1_ps(row_exponent[r])));
      _mm512_mask_storeu_ps(y + r * ldy + b * kBf16Block, m, _mm512_add_ps(scaled, bv));
    }
  }
}

struct Tiles {
  using Fn = void (*)(const uint16_t*, const float*, int64_t, const uint16_t*, int64_t, int64_t, int64_t, int64_t,
                      float*, const float*, const float*, float*, int64_t, __mmask16);
  template <int kRows, int kBlocks>
  static constexpr Fn run = tile<kRows, kBlocks>;
};

// dst[0, padded_in) = bf16(src[0, n)) x 2^-exponent as fp16 (exact: 8 significant bits in 11,
// the largest value in [1, 2), so only values below 2^-14 of it lose bits), zero beyond n;
// exponent is 0 for a row of zeros.
void convert_row(const float* src, int64_t n, int64_t padded_in, uint16_t* dst, float& exponent) {
  __m512 peak = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16)
    peak = _mm512_max_ps(peak, _mm512_abs_ps(simd::round_to_bf16(_mm512_maskz_loadu_ps(simd::lanes(n - i), src + i))));
  const float largest = _mm512_reduce_max_ps(peak);
  exponent = largest > 0.0f && std::isfinite(largest) ? std::floor(std::log2(largest)) : 0.0f;
  const __m512 down = _mm512_set1_ps(-exponent);
  for (int64_t i = 0; i < padded_in; i += 16) {
    const __m512 v = simd::round_to_bf16(_mm512_maskz_loadu_ps(simd::lanes(n - i), src + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm512_cvtps_ph(_mm512_scalef_ps(v, down), _MM_FROUND_TO_NEAREST_INT));
  }
}

}  // namespace

void bf16_gemm_fp16(const PackedBf16View& w, const float* x, uint16_t* scratch, float* row_exponent, float* y,
                    int64_t rows) {
  const int64_t ldx = w.padded_in;
  for (int64_t r = 0; r < rows; ++r) convert_row(x + r * w.in, w.in, ldx, scratch + r * ldx, row_exponent[r]);
  const int64_t num_chunks = w.padded_in / kBf16Chunk;
  for_each_group(w.tiles, w.out, w.in, w.padded_in, w.num_groups, rows,
                 [&](int64_t, const uint16_t* wg, int64_t col, int64_t blocks) {
    const __mmask16 last_mask = simd::lanes(w.out - col - (blocks - 1) * kBf16Block);
    if (rows <= kMaxRows) {
      tile_for<Tiles, kMaxRows, kBf16GroupBlocks>(rows, blocks)(
          scratch, row_exponent, ldx, wg, blocks * kBf16TileElems, 0, num_chunks, num_chunks, nullptr,
          w.out_exponent + col, w.bias + col, y + col, w.out, last_mask);
      return;
    }
    // Half groups; up to 12 rows one tile over all chunks, more as row tiles over spans.
    for (int64_t b0 = 0; b0 < blocks; b0 += kHalfGroupBlocks) {
      const int64_t n_blocks = std::min<int64_t>(kHalfGroupBlocks, blocks - b0);
      const int64_t c = col + b0 * kBf16Block;
      const __mmask16 mask = b0 + n_blocks == blocks ? last_mask : static_cast<__mmask16>(0xffff);
      for_each_row_tile<kMaxHalfGroupRows, kPartialWidth>(
          rows, num_chunks, [&](int64_t r, int64_t n, int64_t ch0, int64_t ch1, float* partial) {
            tile_for<Tiles, kMaxHalfGroupRows, kHalfGroupBlocks>(n, n_blocks)(
                scratch + r * ldx, row_exponent + r, ldx, wg + b0 * kBf16TileElems, blocks * kBf16TileElems, ch0,
                ch1, num_chunks, ch0 == 0 && ch1 == num_chunks ? nullptr : partial, w.out_exponent + c,
                w.bias + c, y + r * w.out + c, w.out, mask);
          });
    }
  });
}

}  // namespace dspark::kernels
