// The attention tile kernels (internal to kernels/): one step of the online softmax over a
// tile of keys, for the query rows of one KV head. Each ISA's tile is compiled in its own
// translation unit (attention_tile_avx512.cpp, attention_tile_avx2.cpp) for that ISA alone;
// kernels/attention.cpp walks the keys and picks the tile at run time.
#pragma once

#include <cstdint>

namespace dspark::kernels {

// Keys per online-softmax step. Tiles start at absolute positions 0, kAttentionTile, ...
// so the order of operations for a query row is fixed by its num_keys alone.
inline constexpr int64_t kAttentionTile = 32;
inline constexpr int64_t kMaxAttentionHeadDim = 256;
// Query rows (token, head) of one KV head processed together: one vector lane each.
inline constexpr int64_t kMaxAttentionRows = 16;

// Running state of the online softmax of a unit's query rows, one lane per row (the tiles
// update all rows' states a vector at a time).
struct AttentionRowStates {
  alignas(64) float max[kMaxAttentionRows];
  alignas(64) float sum[kMaxAttentionRows];
};

// One tile of keys for `num_rows` query rows (heads, of one or more tokens) that share a
// KV head. q: [num_rows] rows of head_dim; k_rows/v_rows: the tile's rows of T (f32, or
// bf16 bits as uint16_t); counts: [num_rows] keys of the tile each row sees (a row with
// none is left as it is); acc: [num_rows, acc stride]. A row's operations depend on its
// own count only, never on the other rows.
template <typename T>
using AttendTileFn = void (*)(const float* const* q, int64_t num_rows, const T* const* k_rows,
                              const T* const* v_rows, const int64_t* counts, int64_t head_dim, float scale,
                              AttentionRowStates& state, float* acc);

// A tile kernel per KV dtype, for one head_dim.
struct AttendTiles {
  AttendTileFn<float> f32;      // f32 KV pools
  AttendTileFn<uint16_t> bf16;  // bf16 KV pools
};

// The 16-lane tiles for head_dim <= kMaxAttentionHeadDim: acc stride head_dim rounded up
// to 16. Run only where the CPU has AVX-512 F/BW/VL/DQ.
AttendTiles attend_tiles_avx512(int64_t head_dim);

// The 8-lane tiles for head_dim a multiple of 8, <= kMaxAttentionHeadDim: acc stride
// head_dim. Need AVX2 + FMA (the build's baseline).
AttendTiles attend_tiles_avx2(int64_t head_dim);

}  // namespace dspark::kernels
