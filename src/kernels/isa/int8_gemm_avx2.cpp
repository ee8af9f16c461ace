// int8 (or 4-bit) weights x int8 activations with AVX2 (no VNNI), producing exactly the
// vpdpbusd sum u of the offset weights (int8_kernels.h), so the f32 epilogue is the VNNI
// kernel's and both give the same bits.
// - 8-bit weights: vpmaddubsw on |q_x| and the weights' signs flipped by q_x's (pairs stay
//   below int16 saturation: 2 x 127 x 127), vpmaddwd to 4-element int32 sums, plus 128 Σ q_x.
// - 4-bit weights: the nibble n = q + 8 is vpmaddubsw's unsigned operand as stored, against
//   the signed q_x: a pair is at most 2 x 15 x 127 = 3,810 in magnitude, so a chunk's 8 steps
//   add up in int16 (30,480 at most) before one vpmaddwd by 16 gives u = Σ (16 q + 128) q_x
//   = 16 Σ n q_x. No signs to flip and no Σ q_x: one multiply per 32 products, where 8-bit
//   weights take two (a 9-row product is bound by them).
#include <immintrin.h>

#include <cstring>

#include "core/thread_pool.h"
#include "kernels/isa/int8_kernels.h"
#include "kernels/isa/int8_ymm.h"

namespace dspark::kernels {
namespace {

// Rows per tile: 8-bit, 2 rows x 2 halves: 4 int32 sums + 4 f32 sums (of 16 ymm); 4-bit,
// kMaxRows4 rows (their f32 sums, touched once a chunk, may live in memory).
constexpr int kMaxRows = 2;
constexpr int kMaxRows4 = 3;
// Unlike the other kernels, each tile runs over all of k on its own (no row spans,
// kernels/isa/row_spans.h): at 9 rows this kernel is bound by its multiply-adds, not by the
// weight stream, and taking turns over spans measured 5-10% slower (kernels_bench, int8, M =
// 9 and 64, Zen 4 forced to avx2).

float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

int32_t hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// quantize_int8_row with 8-lane vectors: the same operations, so the same bytes; also
// keeps Σ q per chunk as an integer for the offset term.
void quantize_row(const float* x, int64_t in, int64_t padded_in, int64_t r, const Int8Activations& a,
                  int32_t* sums) {
  const int64_t num_chunks = padded_in / kInt8Chunk;
  int8_t* q = a.q + r * padded_in;
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t ch = 0; ch < num_chunks; ++ch) {
    const int64_t k0 = ch * kInt8Chunk;
    alignas(32) float v[kInt8Chunk] = {};
    const int64_t n = in - k0 < kInt8Chunk ? in - k0 : kInt8Chunk;
    std::memcpy(v, x + k0, static_cast<size_t>(n) * sizeof(float));
    __m256 m = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_load_ps(v + 8 * i)));
    const float amax = hmax(m);
    const float t = amax / 127.0f;
    const __m256 inv = _mm256_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
    __m256i qi[4], total = _mm256_setzero_si256();
    for (int i = 0; i < 4; ++i) {
      qi[i] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_load_ps(v + 8 * i), inv));
      total = _mm256_add_epi32(total, qi[i]);
    }
    // int32 -> int8 (values within [-127, 127]); packs interleave 128-bit lanes: undo it.
    const __m256i w01 = _mm256_packs_epi32(qi[0], qi[1]), w23 = _mm256_packs_epi32(qi[2], qi[3]);
    const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w01, w23),
                                                      _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + k0), bytes);
    const int32_t sum = hsum(total);
    if (sums != nullptr) sums[r * num_chunks + ch] = sum;
    a.scale[r * num_chunks + ch] = t;
    a.offset[r * num_chunks + ch] = t * static_cast<float>(128 * sum);
  }
}

// Half h of one block's weights for steps [kq, kq + kSteps) of k (4 k each): for 8-bit
// weights the signed q, the offset bytes (int8_kernels.h) with their top bit flipped; for
// 4-bit weights the nibbles n = q + 8 as bytes (the low nibbles step kq, the high ones kq + 1).
template <int kBits>
inline void load_weights(const uint8_t* block, int64_t kq, int h, __m256i* w) {
  const uint8_t* bytes = block + kq / int8_steps_per_load(kBits) * 64 + h * 32;
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes));
  if constexpr (kBits == 8) {
    w[0] = _mm256_xor_si256(raw, _mm256_set1_epi8(static_cast<char>(0x80)));  // (q + 128) ^ 0x80 = q
  } else {
    w[0] = int4_ymm_nibbles(raw, false);
    w[1] = int4_ymm_nibbles(raw, true);
  }
}

// kRows rows x one 16-output block (two 8-lane halves) at block b of a group.
template <int kBits, int kRows>
void tile(const Int8Activations& a, const int32_t* sums, int64_t row0, int64_t ldq, int64_t num_chunks,
          const uint8_t* records, int64_t record_bytes, int64_t blocks, int64_t b, const float* bias, float* y,
          int64_t ldy, int64_t valid) {
  __m256 acc[kRows][2];
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  const int8_t* q = a.q + row0 * ldq;
  const float* ts = a.scale + row0 * num_chunks;
  const float* cs = a.offset + row0 * num_chunks;
  const int32_t* ss = kBits == 8 ? sums + row0 * num_chunks : nullptr;  // Σ q_x per chunk
  constexpr int kSteps = int8_steps_per_load(kBits);
  constexpr int64_t kBlockBytes = int8_block_bytes(kBits);
  const __m256i ones = _mm256_set1_epi16(1), sixteen = _mm256_set1_epi16(16);
  for (int64_t ch = 0; ch < num_chunks; ++ch) {
    const uint8_t* rec = records + ch * record_bytes;
    const uint8_t* ahead = rec + int8_prefetch_chunks(kRows) * record_bytes + b * kBlockBytes;
    for (int64_t line = 0; line < kBlockBytes; line += 64)
      _mm_prefetch(reinterpret_cast<const char*>(ahead + line), _MM_HINT_T0);
    const uint8_t* wb = rec + b * kBlockBytes;
    const uint8_t* sw = rec + blocks * kBlockBytes + b * int8_scale_bytes(kBits);  // this block's scales
    __m256i dot[kRows][2];
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) dot[r][0] = dot[r][1] = _mm256_setzero_si256();
    auto steps = [&](int64_t kq) {  // steps [kq, kq + kSteps) of k
      __m256i w[2][kSteps];  // [half][step]
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) load_weights<kBits>(wb, kq, h, w[h]);
#pragma GCC unroll 2
      for (int s = 0; s < kSteps; ++s)
#pragma GCC unroll 4
        for (int r = 0; r < kRows; ++r) {
          int32_t four;
          std::memcpy(&four, q + r * ldq + ch * kInt8Chunk + (kq + s) * 4, sizeof(four));
          const __m256i xv = _mm256_set1_epi32(four);
          if constexpr (kBits == 8) {
            const __m256i xa = _mm256_abs_epi8(xv);
#pragma GCC unroll 2
            for (int h = 0; h < 2; ++h)
              dot[r][h] = _mm256_add_epi32(
                  dot[r][h], _mm256_madd_epi16(_mm256_maddubs_epi16(xa, _mm256_sign_epi8(w[h][s], xv)), ones));
          } else {  // int16 sums of n q_x
#pragma GCC unroll 2
            for (int h = 0; h < 2; ++h) dot[r][h] = _mm256_add_epi16(dot[r][h], _mm256_maddubs_epi16(w[h][s], xv));
          }
        }
    };
    if constexpr (kBits == 4) {
      // Not unrolled: unrolled, the compiler regroups the int16 sums of the 8 steps as a tree
      // and spills the products (a 9-row product 1.3x slower). The 8-bit loop, unrolled, is
      // 10-20% faster than rolled.
#pragma GCC unroll 1
      for (int64_t kq = 0; kq < kInt8Chunk / 4; kq += kSteps) steps(kq);
    } else {
      for (int64_t kq = 0; kq < kInt8Chunk / 4; kq += kSteps) steps(kq);
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256 s = int8_ymm_scales<kBits>(sw, h);
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r) {
        // u: exactly what vpdpbusd sums for the offset weights; 8-bit, Σ q_w q_x + 128 Σ q_x;
        // 4-bit, 16 Σ n q_x.
        const __m256i u = kBits == 8 ? _mm256_add_epi32(dot[r][h], _mm256_set1_epi32(128 * ss[r * num_chunks + ch]))
                                     : _mm256_madd_epi16(dot[r][h], sixteen);
        const __m256 t = _mm256_fmsub_ps(_mm256_cvtepi32_ps(u), _mm256_set1_ps(ts[r * num_chunks + ch]),
                                         _mm256_set1_ps(cs[r * num_chunks + ch]));
        acc[r][h] = _mm256_fmadd_ps(t, s, acc[r][h]);
      }
    }
  }
  const __m256 b0 = _mm256_loadu_ps(bias), b1 = _mm256_loadu_ps(bias + 8);
  for (int r = 0; r < kRows; ++r) {
    alignas(32) float out[16];
    _mm256_store_ps(out, _mm256_add_ps(acc[r][0], b0));
    _mm256_store_ps(out + 8, _mm256_add_ps(acc[r][1], b1));
    std::memcpy(y + r * ldy, out, static_cast<size_t>(valid < 16 ? valid : 16) * sizeof(float));
  }
}

// The tile for the next rows_left rows (at most the bit width's kMaxRows).
using TileFn = decltype(&tile<8, 1>);
template <int kBits>
TileFn tile_for(int64_t rows_left) {
  if constexpr (kBits == 8) return rows_left >= 2 ? tile<8, 2> : tile<8, 1>;
  else return rows_left >= 3 ? tile<4, 3> : rows_left == 2 ? tile<4, 2> : tile<4, 1>;
}

}  // namespace

void quantize_int8_rows_avx2(const float* x, int64_t in, int64_t padded_in, int64_t rows, const Int8Activations& a,
                             int32_t* sums) {
  for (int64_t r = 0; r < rows; ++r) quantize_row(x + r * in, in, padded_in, r, a, sums);
}

void int8_gemm_avx2(const PackedInt8View& w, const float* x, const Int8Activations& a, int32_t* sums, float* y,
                    int64_t rows) {
  quantize_int8_rows_avx2(x, w.in, w.padded_in, rows, a, w.bits == 8 ? sums : nullptr);
  const int64_t num_chunks = w.padded_in / kInt8Chunk;
  const int64_t max_rows = w.bits == 8 ? kMaxRows : kMaxRows4;
  parallel_for(w.num_groups, rows * w.out * w.in >= kInt8ParallelMinMacs, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
      const Int8Group group = int8_group(w, g, num_chunks);
      for (int64_t b = 0; b < group.blocks; ++b)
        for (int64_t r = 0; r < rows; r += max_rows) {
          const int64_t col = group.col + b * kInt8Block;
          TileFn fn = w.bits == 4 ? tile_for<4>(rows - r) : tile_for<8>(rows - r);
          fn(a, sums, r, w.padded_in, num_chunks, group.records, group.record_bytes, group.blocks, b, w.bias + col,
             y + r * w.out + col, w.out, w.out - col);
        }
    }
  });
}

}  // namespace dspark::kernels
