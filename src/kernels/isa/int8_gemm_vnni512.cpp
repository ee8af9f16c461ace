// int8 weights x int8 activations with AVX512_VNNI vpdpbusd (u8 weights x s8 inputs,
// 64 multiply-adds per instruction), scales applied per 32-column chunk in f32.
#include <immintrin.h>

#include <array>
#include <cstring>
#include <utility>

#include "core/thread_pool.h"
#include "kernels/isa/int8_kernels.h"
#include "kernels/isa/row_spans.h"
#include "kernels/simd.h"

namespace dspark::kernels {
namespace {

// The weights of steps [kq, kq + kSteps) of k (4 k each) of one block as vpdpbusd's
// unsigned operand: one 64-byte load; a 4-bit load widened to two (int8_kernels.h).
template <int kBits>
inline void load_weights(const uint8_t* block, int64_t kq, __m512i* w) {
  const __m512i raw = _mm512_loadu_si512(block + kq / int8_steps_per_load(kBits) * 64);
  if constexpr (kBits == 8) {
    w[0] = raw;
  } else {
    const __m512i high = _mm512_set1_epi8(static_cast<char>(0xF0));
    w[0] = _mm512_and_si512(_mm512_slli_epi16(raw, 4), high);
    w[1] = _mm512_and_si512(raw, high);
  }
}

// One block's 16 scales as the epilogue multiplies by them: f32, or for 4-bit weights f16
// divided by 16 (exact; int8_kernels.h).
template <int kBits>
inline __m512 load_scales(const uint8_t* scales) {
  if constexpr (kBits == 8) return _mm512_loadu_ps(scales);
  const __m512 s = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales)));
  return _mm512_mul_ps(s, _mm512_set1_ps(1.0f / 16.0f));
}

// kRows rows x the group's kBlocks blocks over chunks [ch0, ch1) of kBits-bit weights. Chunk
// records of the group are record_bytes apart; `blocks` is the group's block count (record
// layout); partial: [kRows][32] f32 sums carried between spans (kernels/isa/row_spans.h).
template <int kBits, int kRows, int kBlocks>
void tile(const Int8Activations& a, int64_t row0, int64_t ldq, int64_t ch0, int64_t ch1, int64_t num_chunks,
          float* partial, const uint8_t* records, int64_t record_bytes, int64_t blocks, const float* bias, float* y,
          int64_t ldy, int64_t valid_cols) {
  constexpr int kSteps = int8_steps_per_load(kBits);
  constexpr int64_t kBlockBytes = int8_block_bytes(kBits);
  // f32 and int32 sums of every row and block, plus weights, a broadcast and the 4-bit
  // mask: 32 registers.
  static_assert(kRows * kBlocks * 2 + kBlocks * kSteps + kSteps <= 32);
  __m512 acc[kRows][kBlocks];
  #pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r)
    #pragma GCC unroll 16
    for (int b = 0; b < kBlocks; ++b)
      acc[r][b] = ch0 == 0 ? _mm512_setzero_ps() : _mm512_load_ps(partial + r * kInt8Group + b * kInt8Block);
  const int8_t* q = a.q + row0 * ldq;
  const float* ts = a.scale + row0 * num_chunks;
  const float* cs = a.offset + row0 * num_chunks;
  for (int64_t ch = ch0; ch < ch1; ++ch) {
    const uint8_t* rec = records + ch * record_bytes;
    // Ask for a later record's weights now (int8_prefetch_chunks: measured 30% off the
    // 9-token step, 2-15% off decoding).
    const uint8_t* ahead = rec + int8_prefetch_chunks(kRows) * record_bytes;
    for (int64_t line = 0; line < kBlocks * kBlockBytes; line += 64)
      _mm_prefetch(reinterpret_cast<const char*>(ahead + line), _MM_HINT_T0);
    const uint8_t* wb = rec;
    const uint8_t* sw = rec + blocks * kBlockBytes;  // the blocks' scales
    // Integer sums of one chunk for both blocks at once (each row's 4-byte activation
    // group broadcast once), then scaled into acc.
    __m512i dot[kRows][kBlocks];
    #pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r)
      #pragma GCC unroll 16
      for (int b = 0; b < kBlocks; ++b) dot[r][b] = _mm512_setzero_si512();
    for (int64_t kq = 0; kq < kInt8Chunk / 4; kq += kSteps) {
      __m512i wv[kBlocks][kSteps];
      #pragma GCC unroll 16
      for (int b = 0; b < kBlocks; ++b) load_weights<kBits>(wb + b * kBlockBytes, kq, wv[b]);
      #pragma GCC unroll 2
      for (int s = 0; s < kSteps; ++s)
        #pragma GCC unroll 16
        for (int r = 0; r < kRows; ++r) {
          int32_t four;
          std::memcpy(&four, q + r * ldq + ch * kInt8Chunk + (kq + s) * 4, sizeof(four));
          const __m512i xv = _mm512_set1_epi32(four);
          #pragma GCC unroll 16
          for (int b = 0; b < kBlocks; ++b) dot[r][b] = _mm512_dpbusd_epi32(dot[r][b], wv[b][s], xv);
        }
    }
    #pragma GCC unroll 16
    for (int b = 0; b < kBlocks; ++b) {
      const __m512 s = load_scales<kBits>(sw + b * int8_scale_bytes(kBits));
      #pragma GCC unroll 16
      for (int r = 0; r < kRows; ++r) {
        const __m512 t = _mm512_fmsub_ps(_mm512_cvtepi32_ps(dot[r][b]), _mm512_set1_ps(ts[r * num_chunks + ch]),
                                         _mm512_set1_ps(cs[r * num_chunks + ch]));
        acc[r][b] = _mm512_fmadd_ps(t, s, acc[r][b]);
      }
    }
  }
  if (ch1 < num_chunks) {
    #pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r)
      #pragma GCC unroll 16
      for (int b = 0; b < kBlocks; ++b) _mm512_store_ps(partial + r * kInt8Group + b * kInt8Block, acc[r][b]);
    return;
  }
  #pragma GCC unroll 16
  for (int b = 0; b < kBlocks; ++b) {
    const __m512 bv = _mm512_loadu_ps(bias + b * kInt8Block);
    const __mmask16 m = simd::lanes(valid_cols - b * kInt8Block);
    #pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r)
      _mm512_mask_storeu_ps(y + r * ldy + b * kInt8Block, m, _mm512_add_ps(acc[r][b], bv));
  }
}

using TileFn = void (*)(const Int8Activations&, int64_t, int64_t, int64_t, int64_t, int64_t, float*,
                        const uint8_t*, int64_t, int64_t, const float*, float*, int64_t, int64_t);

// Up to 6 rows x both blocks of a group per tile (6 x 2 f32 sums + 6 x 2 int32 sums + two
// weight and one broadcast register: 27 of 32; 4-bit weights: four weight registers and the
// nibble mask, 30), so each row's activations are broadcast once per chunk for both blocks;
// one block for a last group that has only one. More rows
// take turns over spans of chunks (kernels/isa/row_spans.h): 9 rows as 5 + 4. Measured on
// Zen 5 against 9-row tiles that summed the blocks in turn (broadcasting every activation
// twice): the 9-token step 16% faster, 16 and 64 tokens 35-44% faster.
template <int kBits, int kBlocks, int... kRows>
constexpr std::array<TileFn, sizeof...(kRows)> tiles(std::integer_sequence<int, kRows...>) {
  return {tile<kBits, kRows + 1, kBlocks>...};
}
constexpr int kMaxTileRows = 6;
// [blocks - 1][rows - 1], for 8- and 4-bit weights.
template <int kBits>
constexpr std::array<std::array<TileFn, kMaxTileRows>, 2> kTiles = {
    tiles<kBits, 1>(std::make_integer_sequence<int, kMaxTileRows>{}),
    tiles<kBits, 2>(std::make_integer_sequence<int, kMaxTileRows>{})};

// quantize_int8_row with 16-lane vectors: the same operations, so the same bytes.
void quantize_row(const float* x, int64_t in, int64_t padded_in, int64_t r, const Int8Activations& a) {
  const int64_t num_chunks = padded_in / kInt8Chunk;
  int8_t* q = a.q + r * padded_in;
  for (int64_t ch = 0; ch < num_chunks; ++ch) {
    const int64_t k0 = ch * kInt8Chunk;
    const __mmask16 m0 = simd::lanes(in - k0), m1 = simd::lanes(in - k0 - 16);
    const __m512 v0 = _mm512_maskz_loadu_ps(m0, x + k0), v1 = _mm512_maskz_loadu_ps(m1, x + k0 + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    const float t = amax / 127.0f;
    const __m512 inv = _mm512_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
    const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, inv)), q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, inv));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + k0), _mm512_cvtsepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + k0 + 16), _mm512_cvtsepi32_epi8(q1));
    const int32_t sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    a.scale[r * num_chunks + ch] = t;
    a.offset[r * num_chunks + ch] = t * static_cast<float>(128 * sum);
  }
}

}  // namespace

void quantize_int8_rows_avx512(const float* x, int64_t in, int64_t padded_in, int64_t rows, const Int8Activations& a) {
  for (int64_t r = 0; r < rows; ++r) quantize_row(x + r * in, in, padded_in, r, a);
}

void int8_gemm_vnni512(const PackedInt8View& w, const float* x, const Int8Activations& a, float* y, int64_t rows) {
  quantize_int8_rows_avx512(x, w.in, w.padded_in, rows, a);
  const int64_t num_chunks = w.padded_in / kInt8Chunk;
  const int64_t ldq = w.padded_in;
  const auto& by_blocks = w.bits == 4 ? kTiles<4> : kTiles<8>;
  parallel_for(w.num_groups, rows * w.out * w.in >= kInt8ParallelMinMacs, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
      const Int8Group group = int8_group(w, g, num_chunks);
      for_each_row_tile<kMaxTileRows, kInt8Group>(rows, num_chunks, [&](int64_t r, int64_t n, int64_t ch0, int64_t ch1,
                                                                           float* partial) {
        by_blocks[group.blocks - 1][n - 1](
            a, r, ldq, ch0, ch1, num_chunks, partial, group.records, group.record_bytes, group.blocks,
            w.bias + group.col, y + r * w.out + group.col, w.out, w.out - group.col);
      });
    }
  });
}

}  // namespace dspark::kernels
