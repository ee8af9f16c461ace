// CapturedStates: the target's captured hidden states (the layers a DSpark or DFlash
// drafter reads) of every computed position, kept per KV block beside its K/V. With prefix
// caching, a request that takes cached blocks did not run the target over those
// positions, yet its drafter needs their states as context; they are read back from here
// and shown to the drafter as if just computed, bit for bit what the target would have
// produced (the kernels are batch-invariant).
#pragma once

#include <cstdint>
#include <memory>

#include "model/block_allocator.h"
#include "spec/proposer.h"

namespace dspark {

class CapturedStates {
 public:
  CapturedStates(int64_t num_blocks, int64_t block_size, int64_t num_captures, int64_t hidden_size);

  // Copies num_positions rows of a forward's captured states (capture c, row i at
  // rows + c * capture_stride + i * hidden_size) to positions first_position.. of `table`.
  void store(const BlockTable& table, int64_t first_position, int64_t num_positions, const float* rows,
             int64_t capture_stride);
  // The states of block `block_index` of `table` (all block_size positions), for `slot`.
  CommittedHiddenStates block(int32_t slot, const BlockTable& table, int64_t block_index) const;

  size_t bytes() const;

 private:
  int64_t num_blocks_;
  int64_t block_size_;
  int64_t num_captures_;
  int64_t hidden_size_;
  // [num_blocks, num_captures, block_size, hidden_size], left uninitialised so that blocks
  // never written cost no memory.
  std::unique_ptr<float[]> data_;
};

}  // namespace dspark
