// Row tiles over spans of weight chunks, for the matmul kernels of every ISA and weight
// format (internal to kernels/isa/).
//
// A tile keeps its rows' sums in registers, so a kernel runs more rows than fit as several
// row tiles. Were each tile to run over all of k before the next starts, only the first
// would overlap its arithmetic with the weights streaming from memory; the others would
// compute alone, on weights already in cache. Instead every row tile runs over a short span
// of chunks in turn (the span stays in L1 for the later ones) and leaves its sums in memory
// for the next span. Each output's chain of multiply-adds keeps its order (an f32 store and
// load are exact), so row r gives the same bits whatever M.
#pragma once

#include <cstdint>

namespace dspark::kernels {

// Rows of one pass (their sums, [rows][group width] f32, live on the stack between spans).
inline constexpr int64_t kMaxSpanRows = 48;
// Chunks per span: 4 chunks of a group's weights (16 KB bf16, 4.5 KB int8).
inline constexpr int64_t kSpanChunks = 4;

// For the `rows` rows of one group of kGroupWidth outputs, calls tile(r, n, ch0, ch1,
// partial): rows [r, r + n) (n <= kMaxTileRows) over chunks [ch0, ch1), with partial = that
// tile's [n][kGroupWidth] f32 sums.
// The tile starts from zero at ch0 == 0 and from partial otherwise, and leaves its sums in
// partial unless ch1 == num_chunks (then it stores y). At most kMaxTileRows rows need no
// spans: one tile runs over all chunks. Row tiles of a pass are as equal as possible
// (9 rows and kMaxTileRows 6: 5 + 4, so no tile is much cheaper than the weight loads).
// static: each ISA's translation unit compiles its own copy.
template <int64_t kMaxTileRows, int64_t kGroupWidth, typename Tile>
static inline void for_each_row_tile(int64_t rows, int64_t num_chunks, Tile&& tile) {
  alignas(64) float partial[kMaxSpanRows * kGroupWidth];
  for (int64_t r0 = 0; r0 < rows; r0 += kMaxSpanRows) {
    const int64_t pass_rows = rows - r0 < kMaxSpanRows ? rows - r0 : kMaxSpanRows;
    const int64_t num_tiles = (pass_rows + kMaxTileRows - 1) / kMaxTileRows;
    const int64_t span = num_tiles == 1 ? num_chunks : kSpanChunks;
    for (int64_t ch0 = 0; ch0 < num_chunks; ch0 += span) {
      const int64_t ch1 = ch0 + span < num_chunks ? ch0 + span : num_chunks;
      for (int64_t t = 0, r = r0; t < num_tiles; ++t) {
        const int64_t n = (r0 + pass_rows - r + (num_tiles - t) - 1) / (num_tiles - t);
        tile(r, n, ch0, ch1, partial + (r - r0) * kGroupWidth);
        r += n;
      }
    }
  }
}

}  // namespace dspark::kernels
