// The int8-weight matrix product behind LinearBackend::kPackedInt8 (internal).
//
// y[M, out] ≈ x[M, in] · Wᵀ + bias with W quantized once, at construction, to int8 (or 4
// bits) per output row and 32-column block of k (one f32 scale each), and x quantized per row and
// 32-column block on the fly; integer dot products, scales applied in f32. The format and
// the exact arithmetic are in kernels/isa/int8_kernels.h; reference::int8_linear computes
// the same values with plain loops.
//
// Kernels (the same bits on every path: integer sums are exact, the f32 epilogue is one):
//  - kAmx: AMX tdpbsud for calls of 8-12 rows (the others as kVnni512), ISA level `amx`;
//  - kVnni512: AVX512_VNNI vpdpbusd, ISA level `vnni`;
//  - kAvxVnni: AVX-VNNI vpdpbusd on 256-bit vectors, ISA level `avxvnni`;
//  - kAvx2: vpmaddubsw + vpmaddwd, ISA level `avx2` (CPUs without VNNI).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/aligned_buffer.h"
#include "kernels/isa.h"

namespace dspark {

enum class Int8Kernel : uint8_t { kBest, kAvx2, kAvxVnni, kVnni512, kAmx };

std::string_view int8_kernel_name(Int8Kernel kernel);  // "avx2", "avxvnni", "vnni512", "amx"
Isa int8_kernel_isa(Int8Kernel kernel);                 // the level a kernel needs
// The kernel kBest resolves to under the current ISA cap: AMX, else VNNI, else AVX-VNNI,
// else AVX2, the first one allowed. 4-bit weights run on VNNI, AVX-VNNI or AVX2 (the AMX
// kernel takes 8-bit weights only).
Int8Kernel best_int8_kernel(int bits = 8);

inline constexpr int64_t kInt8ScaleBlock = 32;  // columns of k per weight scale

// W quantized as the kernels store it: q [out, in] in [-127, 127] (8 bits) or [-7, 7]
// (4 bits) and scales [out, ceil(in / 32)]; w ≈ q · scale of its block.
struct Int8Weights {
  std::vector<int8_t> q;      // [out, in]
  std::vector<float> scales;  // [out, ceil(in / 32)]
  int64_t out = 0;
  int64_t in = 0;
  int bits = 8;               // 8 or 4: how many bits each q is packed in
};
// weight: [out, in] f32. Symmetric per output row and 32-column block: 8 bits, scale =
// max|w| / 127 and q = round(w / scale); 4 bits, the scale of least squared error among
// max|w| / d for d = 7 to 9 (q clipped to ±7), each refit to its q by least squares and
// rounded to an f16 value (PackedInt8Gemm packs 4-bit scales as f16 and refuses others).
Int8Weights quantize_int8_weights(const float* weight, int64_t out, int64_t in, int bits = 8);

class PackedInt8Gemm {
 public:
  // bias: [out] or empty; max_rows: the largest M of multiply; kernel: one that takes
  // weights of weights.bits (best_int8_kernel).
  PackedInt8Gemm(const Int8Weights& weights, std::span<const float> bias, int64_t max_rows,
                 Int8Kernel kernel = Int8Kernel::kBest);
  // Multiplies by `source`'s packed weights and bias (shared, read only) with activation
  // scratch of its own for up to max_rows rows and the same kernel: the same bits per row.
  PackedInt8Gemm(const PackedInt8Gemm& source, int64_t max_rows);

  // x: [num_rows, in] f32; y: [num_rows, out] f32. Uses per-object scratch.
  void multiply(const float* x, float* y, int64_t num_rows);

  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  size_t weight_bytes() const { return packed_->size(); }  // int8 weights + scales
  const void* weights_data() const { return packed_->data(); }  // identifies the stored copy
  Int8Kernel kernel() const { return kernel_; }
  int bits() const { return bits_; }

 private:
  int64_t out_;
  int64_t in_;
  int64_t padded_in_;
  int64_t num_groups_;
  int64_t max_rows_;
  int bits_;
  Int8Kernel kernel_;
  void allocate_scratch();

  std::shared_ptr<const AlignedBuffer> packed_;  // chunk records (kernels/isa/int8_kernels.h)
  std::shared_ptr<const AlignedBuffer> bias_;    // [num_groups * 32] f32
  AlignedBuffer x_q_;           // [max_rows, padded_in] int8
  AlignedBuffer x_scale_;       // [max_rows, padded_in / 32] f32
  AlignedBuffer x_offset_;      // [max_rows, padded_in / 32] f32
  AlignedBuffer x_sum_;         // [max_rows, padded_in / 32] int32 (kAvx2)
};

namespace reference {
// The int8 product with plain loops, the same arithmetic (and so the same bits) as the
// kernels. q, scales as in Int8Weights; x: [rows, in]; y: [rows, out].
void int8_linear(const float* x, const Int8Weights& w, const float* bias, float* y, int64_t rows);
}  // namespace reference

}  // namespace dspark
