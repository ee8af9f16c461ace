// What the drafters that keep their own paged KV cache (DSpark / DFlash, EAGLE-3) share:
// sizing that cache, finding a position's slot in it, and loading a target only for the
// tensors a drafter borrows from it (tests and tools; an engine builds drafters over the
// target it runs).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include "model/block_allocator.h"
#include "model/transformer.h"

namespace dspark {

// KV blocks for max_running slots, each holding its visible context (the last
// context_window positions, or max_model_len when 0) plus `extra` scratch positions, with a
// partial block at each end.
int64_t drafter_kv_blocks(int64_t max_running, int64_t max_model_len, int64_t context_window, int64_t extra,
                          int64_t block_size);

// Committed positions per slot whose context projection may wait for the slot's next draft:
// `requested` when >= 0 (at most max_model_len; 0 projects at once), else what about 64 MiB
// of pending rows of row_floats floats over all max_running slots holds.
int64_t pending_positions_per_slot(int64_t requested, int64_t max_running, int64_t max_model_len,
                                   int64_t row_floats);

// The cache slot of `position` in a table of blocks of block_size positions.
inline int64_t slot_of(const BlockTable& blocks, int64_t position, int64_t block_size) {
  return static_cast<int64_t>(blocks.data()[position / block_size]) * block_size + position % block_size;
}

// The target at target_dir with the smallest batch, for its embedding table and LM head.
std::unique_ptr<Transformer> load_target_for_drafter(const std::filesystem::path& target_dir, DType compute,
                                                     WeightQuantization quantization);

}  // namespace dspark
