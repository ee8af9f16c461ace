// An owning, 64-byte-aligned, zero-initialised block of memory. Move-only.
// Used for weights, activations and KV pools: allocated once at start, sliced per step.
// Packed weights and KV pools, which every step reads end to end, come from in_huge_pages().
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <utility>

#include "core/huge_pages.h"

namespace dspark {

class AlignedBuffer {
 public:
  static constexpr size_t kAlignment = 64;

  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t num_bytes) : size_(num_bytes) {
    if (num_bytes == 0) return;
    const size_t rounded = (num_bytes + kAlignment - 1) / kAlignment * kAlignment;
    data_ = static_cast<std::byte*>(std::aligned_alloc(kAlignment, rounded));
    if (!data_) throw std::bad_alloc();
    std::memset(data_, 0, rounded);
  }
  // A slice of a region in 2 MB pages (core/huge_pages.h), for buffers that live as long as
  // the model that reads them every step.
  static AlignedBuffer in_huge_pages(size_t num_bytes) {
    AlignedBuffer buffer;
    if (num_bytes == 0) return buffer;
    HugePageSlice slice = take_huge_page_slice(num_bytes);
    buffer.data_ = slice.data;
    buffer.size_ = num_bytes;
    buffer.region_ = std::move(slice.region);
    return buffer;
  }
  ~AlignedBuffer() { release(); }
  AlignedBuffer(AlignedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        region_(std::move(other.region_)) {}
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      region_ = std::move(other.region_);
    }
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  template <typename T> T* as() { return reinterpret_cast<T*>(data_); }
  template <typename T> const T* as() const { return reinterpret_cast<const T*>(data_); }

 private:
  void release() {
    if (region_) {
      region_.reset();
    } else {
      std::free(data_);
    }
  }

  std::byte* data_ = nullptr;
  size_t size_ = 0;
  std::shared_ptr<void> region_;  // set: data_ is a slice of it (in_huge_pages), not freed here
};

}  // namespace dspark
