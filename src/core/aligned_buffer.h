// An owning, 64-byte-aligned, zero-initialised block of memory. Move-only.
// Used for weights, activations and KV pools: allocated once at start, sliced per step.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

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
  ~AlignedBuffer() { std::free(data_); }
  AlignedBuffer(AlignedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
    if (this != &other) {
      std::free(data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
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
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace dspark
