// The attention tile kernels (internal to kernels/): one step of the online softmax over a
// tile of keys, for the query rows of one KV head. Each ISA's tile is compiled in its own
// translation unit (attention_tile_avx512.cpp, attention_tile_avx2.cpp) for that ISA alone;
// kernels/attention.cpp walks the keys and picks the tile at run time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace dspark::kernels {

// Keys per online-softmax step. A row's tiles start at its first visible position rounded
// down to kAttentionKeyGroup (0 without a window), then every kAttentionTile positions, so
// the order of operations for a query row is fixed by its num_keys and window alone.
inline constexpr int64_t kAttentionTile = 32;
inline constexpr int64_t kMaxAttentionHeadDim = 256;
// Query rows (token, head) of one KV head processed together: one vector lane each in the
// softmax bookkeeping (two 16-lane vectors, four 8-lane ones). 32 take a 9-token step's 18
// rows of a KV head (GQA groups of 2) in one walk over the keys.
inline constexpr int64_t kMaxAttentionRows = 32;

// Running state of the online softmax of a unit's query rows, one lane per row (the tiles
// update all rows' states a vector at a time).
struct AttentionRowStates {
  alignas(64) float max[kMaxAttentionRows];
  alignas(64) float sum[kMaxAttentionRows];
};

// Keys per group: a tile's K is read as two groups of 16 consecutive positions, each one
// vector of 16 keys per element of the head (K blocks are transposed, kernels/attention.h).
inline constexpr int64_t kAttentionKeyGroup = 16;

// The K of one tile, transposed: element i of the tile's key j at
// groups[j / 16][i * stride + j % 16] (a group past the tile's last key is not read). Keys
// [0, skip) of the tile come before the rows' first visible position: no row sees them.
template <typename T>
struct KeyTile {
  const T* groups[2] = {nullptr, nullptr};
  int64_t stride = 0;
  int64_t skip = 0;
};

// One tile of keys for `num_rows` query rows (heads, of one or more tokens) that share a
// KV head. q: [num_rows] rows of head_dim; keys: the tile's K; v_rows: the tile's V rows of
// T (f32, or bf16 bits as uint16_t; for keys before `skip`, any row of the sequence);
// counts: [num_rows] keys of the tile each row sees from its start (a row with no more than
// keys.skip is left as it is); acc: [num_rows, acc stride]. A row's operations depend on its
// own count only, never on the other rows.
template <typename T>
using AttendTileFn = void (*)(const float* const* q, int64_t num_rows, const KeyTile<T>& keys,
                              const T* const* v_rows, const int64_t* counts, int64_t head_dim, float scale,
                              AttentionRowStates& state, float* acc);

// The row groups both tiles share loads within: runs of consecutive rows that see keys in
// the tile (is_active(row)), cut into groups of 8, 4, 2 or 1 rows, at most kMaxRows.
// run_group(std::integral_constant<int, n>{}, first row, count) gets each, count being the
// most keys any row of the group sees. Only group sizes up to kMaxRows are instantiated.
template <int kMaxRows, typename IsActive, typename RunGroup>
inline void for_each_row_group(int64_t num_rows, const int64_t* counts, IsActive is_active, RunGroup&& run_group) {
  static_assert(kMaxRows == 1 || kMaxRows == 2 || kMaxRows == 4 || kMaxRows == 8, "groups of 8, 4, 2 or 1");
  for (int64_t h = 0; h < num_rows;) {
    if (!is_active(h)) {
      ++h;
      continue;
    }
    int64_t run = 1;
    while (run < kMaxRows && h + run < num_rows && is_active(h + run)) ++run;
    auto group = [&](auto rows) {
      constexpr int n = decltype(rows)::value;
      run_group(rows, h, *std::max_element(counts + h, counts + h + n));
      h += n;
    };
    if constexpr (kMaxRows >= 8) {
      if (run >= 8) {
        group(std::integral_constant<int, 8>{});
        continue;
      }
    }
    if constexpr (kMaxRows >= 4) {
      if (run >= 4) {
        group(std::integral_constant<int, 4>{});
        continue;
      }
    }
    if constexpr (kMaxRows >= 2) {
      if (run >= 2) {
        group(std::integral_constant<int, 2>{});
        continue;
      }
    }
    group(std::integral_constant<int, 1>{});
  }
}

// A tile kernel per KV dtype, for one head_dim.
struct AttendTiles {
  AttendTileFn<float> f32;      // f32 KV pools
  AttendTileFn<uint16_t> bf16;  // bf16 KV pools
};

// The tiles of one ISA for `chunks` vectors per head row (1 .. kMaxChunks), from a table of
// Tile::run<T, kChunks>. Each ISA's translation unit passes a file-local Tile type (as
// kernels/isa/tile_table.h), so every instantiation stays internal to that unit.
template <typename Tile, typename T, int... kChunks>
AttendTileFn<T> attend_tile_for(int64_t chunks, std::integer_sequence<int, kChunks...>) {
  static constexpr AttendTileFn<T> kTable[] = {Tile::template run<T, kChunks + 1>...};
  return kTable[chunks - 1];
}
template <typename Tile, int kMaxChunks>
AttendTiles attend_tiles_for(int64_t chunks) {
  return {attend_tile_for<Tile, float>(chunks, std::make_integer_sequence<int, kMaxChunks>{}),
          attend_tile_for<Tile, uint16_t>(chunks, std::make_integer_sequence<int, kMaxChunks>{})};
}

// The 16-lane tiles for head_dim <= kMaxAttentionHeadDim: acc stride head_dim rounded up
// to 16. Run only where the CPU has AVX-512 F/BW/VL/DQ.
AttendTiles attend_tiles_avx512(int64_t head_dim);

// The 8-lane tiles for head_dim a multiple of 8, <= kMaxAttentionHeadDim: acc stride
// head_dim. Need AVX2 + FMA (the build's baseline).
AttendTiles attend_tiles_avx2(int64_t head_dim);

}  // namespace dspark::kernels
