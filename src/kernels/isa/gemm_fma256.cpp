// bf16 or f32 weights multiplied with 256-bit FMA (AVX2): the kernel for CPUs without
// AVX-512. A 16-output block is two 8-lane halves; each tile keeps rows x 2 accumulators
// (of 16 ymm registers).
#include <immintrin.h>

#include <cstring>

#include "kernels/isa/bf16_kernels.h"
#include "kernels/isa/f32_kernels.h"
#include "kernels/isa/group_walk.h"
#include "kernels/isa/prefetch.h"
#include "kernels/isa/row_spans.h"

namespace dspark::kernels {
namespace {

constexpr int64_t kPrefetchChunks = 4;
// 5 rows x 2 halves = 10 accumulators + 4 weights + 2 broadcasts (of 16 ymm). Each
// accumulator is one FMA chain taking 2 dependent FMAs per k-pair, so a tile needs 10 chains
// (2 FMA pipes x 5 cycles of latency) to run at the FMA rate: 9 rows as 5 + 4, not 3 x 3.
constexpr int kMaxRows = 5;

float round_scalar(float f) {  // as float_to_bf16 then back
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) u |= 0x00400000u;
  else u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  std::memcpy(&f, &u, 4);
  return f;
}

void round_row(const float* src, float* dst, int64_t n) {
  const __m256i hi = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(src + i);
    const __m256i u = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
    const __m256i quiet = _mm256_or_si256(u, _mm256_set1_epi32(0x00400000));
    const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    const __m256i bits = _mm256_castps_si256(
        _mm256_blendv_ps(_mm256_castsi256_ps(rounded), _mm256_castsi256_ps(quiet), nan));
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_and_si256(bits, hi)));
  }
  for (; i < n; ++i) dst[i] = round_scalar(src[i]);
}

// The 8 even-k and 8 odd-k weights of half h (outputs 8h .. 8h + 7) of one block's k-pair,
// from its 32 stored values: bf16 pairs interleaved per output (kernels/isa/bf16_kernels.h),
// or f32 evens then odds (kernels/isa/f32_kernels.h).
inline void load_half(const uint16_t* p, int h, __m256& even, __m256& odd) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + h * 16));
  even = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  odd = _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
}
inline void load_half(const float* p, int h, __m256& even, __m256& odd) {
  even = _mm256_loadu_ps(p + h * 8);
  odd = _mm256_loadu_ps(p + kBf16Block + h * 8);
}

// kRows rows x one 16-output block over chunks [ch0, ch1). x: [kRows, ldx] f32; w: the
// block's tile of chunk 0 (chunk_stride weights between chunks); partial: the block's 16 f32
// sums of row 0, rows kBf16Group apart, carried between spans (kernels/isa/row_spans.h);
// y row stride ldy; `valid` outputs stored (1..16).
template <typename W, int kRows>
void tile(const float* x, int64_t ldx, const W* w, int64_t chunk_stride, int64_t ch0, int64_t ch1,
          int64_t num_chunks, float* partial, const float* bias, float* y, int64_t ldy, int64_t valid) {
  __m256 acc[kRows][2];
  #pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r)
    #pragma GCC unroll 16
    for (int h = 0; h < 2; ++h)
      acc[r][h] = ch0 == 0 ? _mm256_setzero_ps() : _mm256_load_ps(partial + r * kBf16Group + h * 8);
  for (int64_t ch = ch0; ch < ch1; ++ch) {
    const W* wc = w + ch * chunk_stride;
    const float* xc = x + ch * kBf16Chunk;
    // Ask for the chunk kPrefetchChunks ahead (fma_tile_prefetches says when), a share of its
    // lines per k-pair (kernels/isa/prefetch.h).
    const W* ahead = wc + kPrefetchChunks * chunk_stride;
    for (int64_t i = 0; i < kBf16ChunkPairs; ++i) {
      if constexpr (fma_tile_prefetches(kRows, sizeof(W)))
        prefetch_step<kBf16TileElems * int64_t{sizeof(W)}, kBf16ChunkPairs>(ahead, i);
      // Both halves' weights first, then each row's two broadcasts feed all four FMAs: every
      // accumulator stays in a register (with the halves in the outer loop GCC spilled
      // accumulators to the stack, a store and a load in every FMA chain).
      __m256 even[2], odd[2];
      #pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) load_half(wc + i * 2 * kBf16Block, h, even[h], odd[h]);
      #pragma GCC unroll 16
      for (int r = 0; r < kRows; ++r) {
        const __m256 xe = _mm256_broadcast_ss(xc + r * ldx + 2 * i);
        const __m256 xo = _mm256_broadcast_ss(xc + r * ldx + 2 * i + 1);
        #pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          acc[r][h] = _mm256_fmadd_ps(xe, even[h], acc[r][h]);
          acc[r][h] = _mm256_fmadd_ps(xo, odd[h], acc[r][h]);
        }
      }
    }
  }
  if (ch1 < num_chunks) {
    #pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r)
      #pragma GCC unroll 16
      for (int h = 0; h < 2; ++h) _mm256_store_ps(partial + r * kBf16Group + h * 8, acc[r][h]);
    return;
  }
  const __m256 b0 = _mm256_loadu_ps(bias), b1 = _mm256_loadu_ps(bias + 8);
  #pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
    alignas(32) float out[16];
    _mm256_store_ps(out, _mm256_add_ps(acc[r][0], b0));
    _mm256_store_ps(out + 8, _mm256_add_ps(acc[r][1], b1));
    std::memcpy(y + r * ldy, out, static_cast<size_t>(valid) * sizeof(float));
  }
}

template <typename W>
using TileFn = void (*)(const float*, int64_t, const W*, int64_t, int64_t, int64_t, int64_t, float*, const float*,
                        float*, int64_t, int64_t);

template <typename W>
TileFn<W> tile_fn(int64_t rows) {
  switch (rows) {
    case 1: return tile<W, 1>;
    case 2: return tile<W, 2>;
    case 3: return tile<W, 3>;
    case 4: return tile<W, 4>;
    default: return tile<W, 5>;
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
                 [&](int64_t g, const W* wg, int64_t, int64_t blocks) {
    for_each_row_tile<kMaxRows, kBf16Group>(rows, num_chunks, [&](int64_t r, int64_t n, int64_t ch0, int64_t ch1, float* partial) {
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t col = g * kBf16Group + b * kBf16Block;
        const int64_t valid = out - col < kBf16Block ? out - col : kBf16Block;
        tile_fn<W>(n)(scratch + r * ldx, ldx, wg + b * kBf16TileElems, blocks * kBf16TileElems, ch0, ch1, num_chunks,
                      partial + b * kBf16Block, bias + col, y + r * out + col, out, valid);
      }
    });
  });
}

}  // namespace

void bf16_gemm_fma256(const PackedBf16View& w, const float* x, float* scratch, float* y, int64_t rows) {
  for (int64_t r = 0; r < rows; ++r) round_row(x + r * w.in, scratch + r * w.padded_in, w.in);
  gemm(w.tiles, w.bias, w.out, w.in, w.padded_in, w.num_groups, scratch, y, rows);
}

void f32_gemm_fma256(const PackedF32View& w, const float* x, float* y, int64_t rows) {
  gemm(w.tiles, w.bias, w.out, w.in, w.padded_in, w.num_groups, x, y, rows);
}

}  // namespace dspark::kernels
