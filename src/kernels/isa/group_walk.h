// The walk over a packed weight matrix's 64-output groups that the bf16 / f32 matmul kernels
// share (internal to kernels/isa/; layout in kernels/isa/bf16_kernels.h).
#pragma once

#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/isa/bf16_kernels.h"

namespace dspark::kernels {

// Calls group(g, group_tiles, col, blocks) for every group g of an [out, in] matrix of packed
// tiles of type W, the groups split over the thread team when rows x out x in multiply-adds
// are worth waking it (kParallelMinMacs), each thread's groups in order: group_tiles = g's
// tiles at chunk 0, col = its first output, blocks = its 16-output blocks (<= 4). Every
// output is computed by one call, so the split never changes a result.
// static: each ISA's translation unit compiles its own copy.
template <typename W, typename Group>
static inline void for_each_group(const W* tiles, int64_t out, int64_t in, int64_t padded_in, int64_t num_groups,
                                  int64_t rows, Group&& group) {
  const int64_t group_elems = padded_in / kBf16Chunk * kBf16GroupBlocks * kBf16TileElems;  // of every full group
  parallel_for(num_groups, rows * out * in >= kParallelMinMacs, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) group(g, tiles + g * group_elems, g * kBf16Group, bf16_blocks_in_group(g, out));
  });
}

}  // namespace dspark::kernels
