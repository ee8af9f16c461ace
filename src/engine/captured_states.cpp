#include "engine/captured_states.h"

#include <algorithm>

#include "core/check.h"

namespace dspark {

CapturedStates::CapturedStates(int64_t num_blocks, int64_t block_size, int64_t num_captures, int64_t hidden_size)
    : num_blocks_(num_blocks),
      block_size_(block_size),
      num_captures_(num_captures),
      hidden_size_(hidden_size),
      data_(new float[static_cast<size_t>(num_blocks * num_captures * block_size * hidden_size)]) {
  DSPARK_CHECK(num_blocks > 0 && block_size > 0 && num_captures > 0 && hidden_size > 0,
               "captured states need a positive shape, got [{}, {}, {}, {}]", num_blocks, num_captures, block_size,
               hidden_size);
}

void CapturedStates::store(const BlockTable& table, int64_t first_position, int64_t num_positions, const float* rows,
                           int64_t capture_stride) {
  for (int64_t i = 0; i < num_positions; ++i) {
    const int64_t position = first_position + i;
    const int64_t block = table[position / block_size_];
    const int64_t offset = position % block_size_;
    float* dst = data_.get() + (block * num_captures_ * block_size_ + offset) * hidden_size_;
    for (int64_t c = 0; c < num_captures_; ++c) {
      const float* src = rows + c * capture_stride + i * hidden_size_;
      std::copy_n(src, hidden_size_, dst + c * block_size_ * hidden_size_);
    }
  }
}

CommittedHiddenStates CapturedStates::block(int32_t slot, const BlockTable& table, int64_t block_index) const {
  CommittedHiddenStates c;
  c.slot = slot;
  c.start_position = static_cast<int32_t>(block_index * block_size_);
  c.num_positions = static_cast<int32_t>(block_size_);
  c.hidden = data_.get() + static_cast<int64_t>(table[block_index]) * num_captures_ * block_size_ * hidden_size_;
  c.layer_stride = block_size_ * hidden_size_;
  c.hidden_size = hidden_size_;
  return c;
}

size_t CapturedStates::bytes() const {
  return static_cast<size_t>(num_blocks_ * num_captures_ * block_size_ * hidden_size_) * sizeof(float);
}

}  // namespace dspark
