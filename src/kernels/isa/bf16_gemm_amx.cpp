// bf16 matmul on AMX tiles (tdpbf16ps): 16-row tiles of x against the packed 1 KB weight
// tiles. The caller has obtained the AMX permission (isa_supported(Isa::kAmx)).
#include <immintrin.h>

#include "core/thread_pool.h"
#include "kernels/isa/amx_tile_config.h"
#include "kernels/isa/bf16_kernels.h"
#include "kernels/simd.h"

namespace dspark::kernels {
namespace {

// Eight tiles of 16 rows x 64 bytes.
void load_tile_config() {
  AmxTileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.colsb[t] = 64;
    config.rows[t] = 16;
  }
  _tile_loadconfig(&config);
}


// One x row block (16 rows, ldx) times kBlocks (1..4) column blocks of a group (w: first
// block's tile of chunk 0; chunk_stride: bf16 between chunks). Tiles: 0-3 accumulators,
// 4 x, 5-7 weights (5 reused for the fourth block). c: [16, 64] f32.
template <int kBlocks>
void one_row_block(const uint16_t* x, int64_t ldx, const uint16_t* w, int64_t chunk_stride, int64_t num_chunks,
                   float* c) {
  _tile_zero(0);
  if constexpr (kBlocks > 1) _tile_zero(1);
  if constexpr (kBlocks > 2) _tile_zero(2);
  if constexpr (kBlocks > 3) _tile_zero(3);
  const int64_t x_stride = ldx * static_cast<int64_t>(sizeof(uint16_t));
  constexpr int64_t kTileStride = 2 * kBf16Block * sizeof(uint16_t);  // 64 bytes per kp row
  for (int64_t ch = 0; ch < num_chunks; ++ch) {
    const uint16_t* wc = w + ch * chunk_stride;
    _tile_loadd(4, x + ch * kBf16Chunk, x_stride);
    _tile_loadd(5, wc, kTileStride);
    if constexpr (kBlocks > 1) _tile_loadd(6, wc + kBf16TileElems, kTileStride);
    if constexpr (kBlocks > 2) _tile_loadd(7, wc + 2 * kBf16TileElems, kTileStride);
    _tile_dpbf16ps(0, 4, 5);
    if constexpr (kBlocks > 1) _tile_dpbf16ps(1, 4, 6);
    if constexpr (kBlocks > 2) _tile_dpbf16ps(2, 4, 7);
    if constexpr (kBlocks > 3) {
      _tile_loadd(5, wc + 3 * kBf16TileElems, kTileStride);
      _tile_dpbf16ps(3, 4, 5);
    }
  }
  constexpr int64_t kRowBytes = kBf16Group * sizeof(float);
  _tile_stored(0, c, kRowBytes);
  if constexpr (kBlocks > 1) _tile_stored(1, c + kBf16Block, kRowBytes);
  if constexpr (kBlocks > 2) _tile_stored(2, c + 2 * kBf16Block, kRowBytes);
  if constexpr (kBlocks > 3) _tile_stored(3, c + 3 * kBf16Block, kRowBytes);
}

// Two x row blocks (32 rows) times kBlocks (1..2) column blocks. Tiles: accumulator of
// (row block rb, block b) is 2 rb + b, x 4-5, weights 6-7. c: [32, 64] f32.
template <int kBlocks>
void two_row_blocks(const uint16_t* x, int64_t ldx, const uint16_t* w, int64_t chunk_stride, int64_t num_chunks,
                    float* c) {
  _tile_zero(0);
  _tile_zero(2);
  if constexpr (kBlocks > 1) {
    _tile_zero(1);
    _tile_zero(3);
  }
  const int64_t x_stride = ldx * static_cast<int64_t>(sizeof(uint16_t));
  constexpr int64_t kTileStride = 2 * kBf16Block * sizeof(uint16_t);
  for (int64_t ch = 0; ch < num_chunks; ++ch) {
    const uint16_t* wc = w + ch * chunk_stride;
    _tile_loadd(4, x + ch * kBf16Chunk, x_stride);
    _tile_loadd(5, x + 16 * ldx + ch * kBf16Chunk, x_stride);
    _tile_loadd(6, wc, kTileStride);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(2, 5, 6);
    if constexpr (kBlocks > 1) {
      _tile_loadd(7, wc + kBf16TileElems, kTileStride);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  constexpr int64_t kRowBytes = kBf16Group * sizeof(float);
  _tile_stored(0, c, kRowBytes);
  _tile_stored(2, c + 16 * kBf16Group, kRowBytes);
  if constexpr (kBlocks > 1) {
    _tile_stored(1, c + kBf16Block, kRowBytes);
    _tile_stored(3, c + 16 * kBf16Group + kBf16Block, kRowBytes);
  }
}

using OneRowBlockFn = void (*)(const uint16_t*, int64_t, const uint16_t*, int64_t, int64_t, float*);

OneRowBlockFn one_row_block_fn(int64_t blocks) {
  switch (blocks) {
    case 1: return one_row_block<1>;
    case 2: return one_row_block<2>;
    case 3: return one_row_block<3>;
    default: return one_row_block<4>;
  }
}

}  // namespace

void bf16_gemm_amx(const PackedBf16View& w, const float* x, uint16_t* scratch, float* y, int64_t rows) {
  const int64_t ldx = w.padded_in;
  for (int64_t r = 0; r < rows; ++r) simd::f32_to_bf16_avx512(x + r * w.in, scratch + r * ldx, w.in);
  const int64_t num_chunks = w.padded_in / kBf16Chunk;
  const int64_t group_elems = num_chunks * kBf16GroupBlocks * kBf16TileElems;
  const int64_t out = w.out;
  const bool parallel = rows * w.out * w.in >= kParallelMinMacs;
  parallel_for(w.num_groups, parallel, [&](int64_t begin, int64_t end) {
    load_tile_config();  // tile configuration is per thread
    alignas(64) float c[32 * kBf16Group];  // [32 rows, 64 outputs] of one call
    for (int64_t g = begin; g < end; ++g) {
      const int64_t blocks = bf16_blocks_in_group(g, out);
      const uint16_t* wg = w.tiles + g * group_elems;
      const int64_t chunk_stride = blocks * kBf16TileElems;
      // Writes rows [r0, r0 + n) x blocks [0, blocks) from c (+ bias).
      auto store = [&](int64_t r0, int64_t n) {
        for (int64_t b = 0; b < blocks; ++b) {
          const int64_t n0 = g * kBf16Group + b * kBf16Block;
          const __mmask16 m = simd::lanes(out - n0);
          const __m512 bv = _mm512_loadu_ps(w.bias + n0);
          for (int64_t r = 0; r < n; ++r)
            _mm512_mask_storeu_ps(y + (r0 + r) * out + n0, m,
                                  _mm512_add_ps(_mm512_load_ps(c + r * kBf16Group + b * kBf16Block), bv));
        }
      };
      int64_t r0 = 0;
      // Pairs of 16-row blocks share each weight tile load; a last single block (or a
      // call of <= 16 rows, as in decoding) streams the group's tiles in order.
      for (; rows - r0 > 16; r0 += 32) {
        for (int64_t b0 = 0; b0 < blocks; b0 += 2) {
          const bool pair = blocks - b0 >= 2;
          (pair ? two_row_blocks<2> : two_row_blocks<1>)(scratch + r0 * ldx, ldx, wg + b0 * kBf16TileElems,
                                                         chunk_stride, num_chunks, c + b0 * kBf16Block);
        }
        store(r0, rows - r0 < 32 ? rows - r0 : 32);
      }
      if (r0 < rows) {
        one_row_block_fn(blocks)(scratch + r0 * ldx, ldx, wg, chunk_stride, num_chunks, c);
        store(r0, rows - r0);
      }
    }
    _tile_release();
  });
}

}  // namespace dspark::kernels
