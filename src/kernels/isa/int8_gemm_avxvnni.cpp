// int8 weights x int8 activations with AVX-VNNI: vpdpbusd on 256-bit vectors (u8 weights x
// s8 inputs, 32 multiply-adds per instruction), for CPUs that have it without AVX-512 (Intel's
// cores since Alder Lake). The records are the VNNI kernel's; each 64-byte vector of a block
// is read as two halves of 8 outputs. Per output the f32 epilogue is the VNNI kernel's, in the
// same chunk order, so the two (and the AVX2 kernel) give the same bits. 4-bit weights: the
// nibbles n = q + 8 as they are are vpdpbusd's unsigned operand, so a chunk sums Σ n q_x, and
// u = 16 Σ n q_x is the sum of the offset weights 16 q + 128 (int8_kernels.h), the scale f16 / 16.
#include <immintrin.h>

#include <array>
#include <cstring>
#include <utility>

#include "core/thread_pool.h"
#include "kernels/isa/int8_kernels.h"
#include "kernels/isa/int8_ymm.h"
#include "kernels/isa/row_spans.h"

namespace dspark::kernels {
namespace {

// kRows rows x kBlocks blocks from block b0 over chunks [ch0, ch1). With 16 registers only
// the integer sums of one chunk stay in registers (kRows x kBlocks x 2 halves, plus the
// weight vectors, a broadcast and the nibble mask); the f32 sums live in partial ([kRows][32],
// in L1), one load and store per row, half and chunk against 8 vpdpbusd.
template <int kBits, int kRows, int kBlocks>
void blocks_pass(const Int8Activations& a, int64_t row0, int64_t ldq, int64_t ch0, int64_t ch1,
                 int64_t num_chunks, float* partial, const uint8_t* records, int64_t record_bytes, int64_t blocks,
                 int64_t b0) {
  static_assert(kRows * kBlocks * 2 + kBlocks * 2 + 2 <= 16);
  constexpr int64_t kBlockBytes = int8_block_bytes(kBits);
  const int8_t* q = a.q + row0 * ldq;
  const float* ts = a.scale + row0 * num_chunks;
  const float* cs = a.offset + row0 * num_chunks;
  float* block_sums = partial + b0 * kInt8Block;  // row r, block b: block_sums + r * kInt8Group + b * kInt8Block
  if (ch0 == 0)
    for (int r = 0; r < kRows; ++r)
      std::memset(block_sums + r * kInt8Group, 0, kBlocks * kInt8Block * sizeof(float));
  for (int64_t ch = ch0; ch < ch1; ++ch) {
    const uint8_t* rec = records + ch * record_bytes;
    // As in the VNNI kernel: the weights stream once per call, so ask ahead.
    const uint8_t* ahead = rec + int8_prefetch_chunks(kRows) * record_bytes + b0 * kBlockBytes;
    for (int64_t line = 0; line < kBlocks * kBlockBytes; line += 64)
      _mm_prefetch(reinterpret_cast<const char*>(ahead + line), _MM_HINT_T0);
    const uint8_t* wb = rec + b0 * kBlockBytes;
    const uint8_t* sw = rec + blocks * kBlockBytes + b0 * int8_scale_bytes(kBits);  // scales of block b0 on
    __m256i dot[kRows][kBlocks * 2];  // [row][block x half]
    #pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r)
      #pragma GCC unroll 4
      for (int v = 0; v < kBlocks * 2; ++v) dot[r][v] = _mm256_setzero_si256();
    constexpr int kSteps = int8_steps_per_load(kBits);
    for (int64_t kq = 0; kq < kInt8Chunk / 4; kq += kSteps) {
      #pragma GCC unroll 2
      for (int step = 0; step < kSteps; ++step) {
        __m256i wv[kBlocks * 2];
        #pragma GCC unroll 4
        for (int v = 0; v < kBlocks * 2; ++v) {
          // 4-bit: one 32-byte load holds steps kq (low nibbles) and kq + 1 (high); read again
          // from L1 for the second rather than held in a register.
          const __m256i raw = _mm256_loadu_si256(
              reinterpret_cast<const __m256i*>(wb + (v / 2) * kBlockBytes + kq / kSteps * 64 + (v % 2) * 32));
          if constexpr (kBits == 8) wv[v] = raw;
          else wv[v] = int4_ymm_nibbles(raw, step == 1);
        }
        #pragma GCC unroll 8
        for (int r = 0; r < kRows; ++r) {
          int32_t four;
          std::memcpy(&four, q + r * ldq + ch * kInt8Chunk + (kq + step) * 4, sizeof(four));
          const __m256i xv = _mm256_set1_epi32(four);
          #pragma GCC unroll 4
          for (int v = 0; v < kBlocks * 2; ++v) dot[r][v] = _mm256_dpbusd_avx_epi32(dot[r][v], wv[v], xv);
        }
      }
    }
    #pragma GCC unroll 4
    for (int v = 0; v < kBlocks * 2; ++v) {
      const __m256 s = int8_ymm_scales<kBits>(sw, v);
      #pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        float* acc = block_sums + r * kInt8Group + v * 8;
        const __m256i u = kBits == 8 ? dot[r][v] : _mm256_slli_epi32(dot[r][v], 4);  // 4-bit: 16 Σ n q_x
        const __m256 t = _mm256_fmsub_ps(_mm256_cvtepi32_ps(u), _mm256_set1_ps(ts[r * num_chunks + ch]),
                                         _mm256_set1_ps(cs[r * num_chunks + ch]));
        _mm256_storeu_ps(acc, _mm256_fmadd_ps(t, s, _mm256_loadu_ps(acc)));
      }
    }
  }
}

// kRows rows x the group's blocks over chunks [ch0, ch1): both blocks at once where the
// registers allow (up to 2 rows: 4 or 8 chains of vpdpbusd instead of 2 or 4, which one
// row's latency-bound chain needs), else one block after the other.
template <int kBits, int kRows>
void tile(const Int8Activations& a, int64_t row0, int64_t ldq, int64_t ch0, int64_t ch1, int64_t num_chunks,
          float* partial, const uint8_t* records, int64_t record_bytes, int64_t blocks, const float* bias, float* y,
          int64_t ldy, int64_t valid_cols) {
  if constexpr (kRows <= 2) {
    if (blocks == 2) {
      blocks_pass<kBits, kRows, 2>(a, row0, ldq, ch0, ch1, num_chunks, partial, records, record_bytes, blocks, 0);
    } else {
      blocks_pass<kBits, kRows, 1>(a, row0, ldq, ch0, ch1, num_chunks, partial, records, record_bytes, blocks, 0);
    }
  } else {
    for (int64_t b = 0; b < blocks; ++b)
      blocks_pass<kBits, kRows, 1>(a, row0, ldq, ch0, ch1, num_chunks, partial, records, record_bytes, blocks, b);
  }
  if (ch1 < num_chunks) return;  // the next span goes on from partial
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t valid = valid_cols - b * kInt8Block < kInt8Block ? valid_cols - b * kInt8Block : kInt8Block;
    const __m256 b0 = _mm256_loadu_ps(bias + b * kInt8Block), b1 = _mm256_loadu_ps(bias + b * kInt8Block + 8);
    for (int r = 0; r < kRows; ++r) {
      const float* acc = partial + r * kInt8Group + b * kInt8Block;
      alignas(32) float out[kInt8Block];
      _mm256_store_ps(out, _mm256_add_ps(_mm256_loadu_ps(acc), b0));
      _mm256_store_ps(out + 8, _mm256_add_ps(_mm256_loadu_ps(acc + 8), b1));
      std::memcpy(y + r * ldy + b * kInt8Block, out, static_cast<size_t>(valid) * sizeof(float));
    }
  }
}

using TileFn = void (*)(const Int8Activations&, int64_t, int64_t, int64_t, int64_t, int64_t, float*,
                        const uint8_t*, int64_t, int64_t, const float*, float*, int64_t, int64_t);
// Up to 6 rows per tile (15 of 16 registers); more rows take turns over spans of chunks
// (kernels/isa/row_spans.h).
constexpr int kMaxTileRows = 6;
template <int kBits, int... kRows>
constexpr std::array<TileFn, sizeof...(kRows)> tiles(std::integer_sequence<int, kRows...>) {
  return {tile<kBits, kRows + 1>...};
}
constexpr auto kTiles8 = tiles<8>(std::make_integer_sequence<int, kMaxTileRows>{});
constexpr auto kTiles4 = tiles<4>(std::make_integer_sequence<int, kMaxTileRows>{});

}  // namespace

void int8_gemm_avxvnni(const PackedInt8View& w, const float* x, const Int8Activations& a, float* y, int64_t rows) {
  quantize_int8_rows_avx2(x, w.in, w.padded_in, rows, a, /*sums=*/nullptr);
  const int64_t num_chunks = w.padded_in / kInt8Chunk;
  const int64_t ldq = w.padded_in;
  const auto& tiles = w.bits == 4 ? kTiles4 : kTiles8;
  parallel_for(w.num_groups, rows * w.out * w.in >= kInt8ParallelMinMacs, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
      const Int8Group group = int8_group(w, g, num_chunks);
      for_each_row_tile<kMaxTileRows, kInt8Group>(rows, num_chunks, [&](int64_t r, int64_t n, int64_t ch0,
                                                                         int64_t ch1, float* partial) {
        tiles[n - 1](a, r, ldq, ch0, ch1, num_chunks, partial, group.records, group.record_bytes, group.blocks,
                      w.bias + group.col, y + r * w.out + group.col, w.out, w.out - group.col);
      });
    }
  });
}

}  // namespace dspark::kernels
