// int8 weights x int8 activations on AMX tiles: tdpbsud multiplies signed activation bytes
// (A: rows x 32 k, straight from the quantized rows) by the unsigned offset weights (B: the
// packed chunk records of kernels/isa/int8_kernels.h are already the tile's layout, 8 rows
// of 16 outputs x 4 k), so it reads the same packed weights as int8_gemm_vnni512. Each
// chunk's integer sums are exact and leave the tile through memory for the vector epilogue,
// which scales them into f32 with int8_gemm_vnni512's operations in the same order: the
// same bits.
//
// One tdpbsud does a chunk's multiply-adds for all rows of a 16-output block, where
// vpdpbusd needs 8 instructions per row; but the weight scales change every 32 columns of
// k, so every chunk's sums must be stored from the tile (about 32 cycles for a group's two
// blocks) and scaled by vector code that does not overlap with the tile instructions
// (measured on Xeon with AMX: 64 + 42 cycles per group and chunk at 9 rows, in series).
// That leaves a gain only where vpdpbusd's per-row cost is highest and all rows fit one
// tile: kMinRows..kMaxRows rows (verification and drafter blocks); other row counts go to
// int8_gemm_vnni512. The caller has obtained the AMX permission (isa_supported(Isa::kAmx)).
#include <immintrin.h>

#include "core/thread_pool.h"
#include "kernels/isa/amx_tile_config.h"
#include "kernels/isa/int8_kernels.h"
#include "kernels/isa/tile_table.h"
#include "kernels/simd.h"

namespace dspark::kernels {
namespace {

// The rows the tiles take: all in one tile, whose f32 sums (12 rows x 32 outputs) stay in 24
// of the 32 zmm registers. Measured on Xeon with AMX against int8_gemm_vnni512 (3072 x 512,
// weights from L3, 2 threads): 1.04-1.16x at 8-12 rows, 0.92-1.06x at 2-7 (a chunk's tile
// work costs the same at any row count) and 0.92-1.01x at 13-16 (two row tiles load and
// store twice).
constexpr int64_t kMinRows = 8;
constexpr int64_t kMaxRows = 12;

// Tiles: 0 the activations (rows x 32 bytes), 1-2 the weights of the group's two blocks
// (8 x 64 bytes), 3-4 the blocks' int32 sums (rows x 16 outputs).
void load_tile_config(int64_t rows) {
  AmxTileConfig config;
  config.colsb[0] = kInt8Chunk;
  config.rows[0] = static_cast<uint8_t>(rows);
  for (int t = 1; t <= 2; ++t) {
    config.colsb[t] = 64;
    config.rows[t] = kInt8Chunk / 4;
  }
  for (int t = 3; t <= 4; ++t) {
    config.colsb[t] = 64;
    config.rows[t] = static_cast<uint8_t>(rows);
  }
  _tile_loadconfig(&config);
}

// All kRows rows (the configured tile rows) x the group's kBlocks blocks over every chunk.
struct Tile {
  using Fn = void (*)(const Int8Activations&, int64_t, int64_t, const uint8_t*, int64_t, int64_t, const float*,
                      float*, int64_t, int64_t);

  template <int kRows, int kBlocks>
  static void tile(const Int8Activations& a, int64_t ldq, int64_t num_chunks, const uint8_t* records,
                   int64_t record_bytes, int64_t blocks, const float* bias, float* y, int64_t ldy, int64_t valid_cols) {
    static_assert(kRows * kBlocks + kBlocks + 4 <= 32);  // f32 sums, scales, temporaries in zmm registers
    __m512 acc[kRows][kBlocks];
    #pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r)
      #pragma GCC unroll 16
      for (int b = 0; b < kBlocks; ++b) acc[r][b] = _mm512_setzero_ps();
    constexpr int64_t kRowBytes = kInt8Block * sizeof(int32_t);
    alignas(64) int32_t sums[kBlocks][kRows * kInt8Block];  // [block][row][16 outputs]
    for (int64_t ch = 0; ch < num_chunks; ++ch) {
      const uint8_t* rec = records + ch * record_bytes;
      const uint8_t* ahead = rec + int8_prefetch_chunks(kRows) * record_bytes;
      for (int64_t line = 0; line < kBlocks * kInt8BlockBytes; line += 64)
        _mm_prefetch(reinterpret_cast<const char*>(ahead + line), _MM_HINT_T0);
      _tile_loadd(0, a.q + ch * kInt8Chunk, ldq);
      _tile_loadd(1, rec, 64);
      _tile_zero(3);
      _tile_dpbsud(3, 0, 1);
      _tile_stored(3, sums[0], kRowBytes);
      if constexpr (kBlocks > 1) {
        _tile_loadd(2, rec + kInt8BlockBytes, 64);
        _tile_zero(4);
        _tile_dpbsud(4, 0, 2);
        _tile_stored(4, sums[1], kRowBytes);
      }
      const float* sw = reinterpret_cast<const float*>(rec + blocks * kInt8BlockBytes);
      #pragma GCC unroll 16
      for (int b = 0; b < kBlocks; ++b) {
        const __m512 s = _mm512_loadu_ps(sw + b * kInt8Block);
        #pragma GCC unroll 16
        for (int r = 0; r < kRows; ++r) {
          const __m512 u = _mm512_cvtepi32_ps(_mm512_load_si512(sums[b] + r * kInt8Block));
          const __m512 t = _mm512_fmsub_ps(u, _mm512_set1_ps(a.scale[r * num_chunks + ch]),
                                           _mm512_set1_ps(a.offset[r * num_chunks + ch]));
          acc[r][b] = _mm512_fmadd_ps(t, s, acc[r][b]);
        }
      }
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

  template <int kRows, int kBlocks>
  static constexpr Fn run = tile<kRows, kBlocks>;
};

}  // namespace

void int8_gemm_amx(const PackedInt8View& w, const float* x, const Int8Activations& a, float* y, int64_t rows) {
  if (rows < kMinRows || rows > kMaxRows) {
    int8_gemm_vnni512(w, x, a, y, rows);
    return;
  }
  quantize_int8_rows_avx512(x, w.in, w.padded_in, rows, a);
  const int64_t num_chunks = w.padded_in / kInt8Chunk;
  parallel_for(w.num_groups, rows * w.out * w.in >= kInt8ParallelMinMacs, [&](int64_t begin, int64_t end) {
    load_tile_config(rows);  // tile configuration is per thread
    for (int64_t g = begin; g < end; ++g) {
      const Int8Group group = int8_group(w, g, num_chunks);
      tile_for<Tile, kMaxRows, 2>(rows, group.blocks)(a, w.padded_in, num_chunks, group.records, group.record_bytes,
                                                      group.blocks, w.bias + group.col, y + group.col, w.out,
                                                      w.out - group.col);
    }
    _tile_release();
  });
}

}  // namespace dspark::kernels
