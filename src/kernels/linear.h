// Linear: y[M, out] = x[M, in] · Wᵀ (+ bias), with W given as [out, in] row-major (the
// PyTorch / Hugging Face layout). Weights are converted to the compute dtype and
// pre-packed once, at construction; forward never allocates.
//
// Contract (tested): row r of y depends only on row r of x, bit for bit, whatever M is
// (1 .. max_rows) — the batch invariance that lossless speculative decoding relies on.
// With compute = bf16, x is rounded to bf16 before the product and accumulation is f32;
// with compute = f32 everything is f32.
//
// Backends, each batch invariant on its own (one Linear never mixes them: their reduction
// orders differ):
//  - kPackedBf16 (what kAuto picks for bf16): hand-written kernels for each ISA level
//    (AVX2 / AVX-512 FMA on widened bf16, vdpbf16ps, AMX, AVX512-FP16 fp16 FMAs), one chosen
//    per process under the ISA cap (kernels/isa.h, kernels/packed_bf16_gemm.h). Each output
//    is one accumulator chain over k in a fixed order (f32; fp16 over 64 k at a time into f32
//    for the fp16 kernel), so a row never depends on M or on the thread count. Near memory
//    bandwidth at M = 1.
//  - kPackedInt8 (what kAuto picks with quantization = kInt8 or kInt4): W quantized to int8
//    or 4 bits at construction (per row and 32 columns), x per row and 32 columns on the fly, integer
//    dot products (VNNI or AVX2, the same bits; kernels/packed_int8_gemm.h). Row r is exact integer work plus a fixed
//    f32 order, so it never depends on M either; compute is ignored.
//  - kPackedF32 (what kAuto picks for f32): the f32 sibling of kPackedBf16 (AVX2 / AVX-512
//    FMA chains over k in order; kernels/packed_f32_gemm.h), batch invariant on every CPU.
//  - kOneDnn (on request only): oneDNN matmul, one primitive per row count made
//    on first use (or by prepare()), weights packed once in the layout oneDNN picks. For
//    bf16, oneDNN's AMX kernels are not batch invariant (measured: they differ between
//    M = 1 and M >= 2 for small shapes, across M at K = 8192, and between 1 and 2 threads),
//    so the process caps oneDNN at AVX-512 BF16 before its first primitive; a bf16 kOneDnn
//    Linear throws if that cap could not be applied. On a CPU without AVX-512, oneDNN's f32
//    matmul (gemm:jit) differs between M = 1 and M > 1, and without AVX512_BF16 its bf16
//    matmul differs between M and thread counts, so kOneDnn is refused for those
//    (linear_backend_supported).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/dtype.h"
#include "kernels/packed_int8_gemm.h"

namespace dspark {

enum class LinearBackend : uint8_t { kAuto, kOneDnn, kPackedBf16, kPackedInt8, kPackedF32 };

// Whether `backend` can run with `compute` on this CPU, batch invariant (kOneDnn needs
// AVX-512: see above). kAuto always can.
bool linear_backend_supported(LinearBackend backend, DType compute);

// How weights are stored for the product: as the compute dtype, or int8 or 4-bit integers
// with scales (kernels/packed_int8_gemm.h).
enum class WeightQuantization : uint8_t { kNone, kInt8, kInt4 };
std::string_view quantization_name(WeightQuantization q);  // "none", "int8", "int4"
WeightQuantization parse_quantization(std::string_view name);  // throws on anything else

struct LinearOptions {
  DType compute = DType::kBF16;                 // kBF16 or kF32
  int64_t max_rows = 512;                       // largest M forward will be called with
  LinearBackend backend = LinearBackend::kAuto;  // kPackedBf16 needs compute = kBF16, kPackedF32 kF32
  WeightQuantization quantization = WeightQuantization::kNone;  // kInt8, kInt4: backend kPackedInt8
};

class Linear {
 public:
  // weight: [out_features, in_features]; bias: [out_features] or empty.
  Linear(std::span<const float> weight, int64_t out_features, int64_t in_features,
         std::span<const float> bias, const LinearOptions& options);
  // Weights already quantized (a checkpoint saved by `dspark quantize`): backend
  // kPackedInt8 whatever options.quantization says; compute is ignored.
  Linear(const Int8Weights& weight, std::span<const float> bias, const LinearOptions& options);
  ~Linear();
  Linear(Linear&&) noexcept;
  // A Linear over this one's weights (shared read only, not copied; they stay alive while
  // either object does) with scratch of its own for up to max_rows rows, so it may run
  // on a different batch size. The packed kernels keep their kernel, so a row has the
  // same bits through either object; oneDNN (f32) pins an implementation for the view's
  // row range, as a Linear built for max_rows would. How a drafter multiplies by the
  // target's LM head.
  Linear shared_view(int64_t max_rows) const;
  // True when both multiply by one stored copy of the weights (a view and its source).
  bool shares_weights_with(const Linear& other) const;
  Linear& operator=(Linear&&) noexcept;

  // x: [num_rows, in_features] f32; y: [num_rows, out_features] f32. 1 <= num_rows <= max_rows.
  // Uses per-object scratch: one object must not run two forwards at once.
  void forward(const float* x, float* y, int64_t num_rows);

  // Builds what forward(num_rows) needs (a oneDNN primitive) now rather than on first use,
  // so the step loop does not allocate. Cheap when already done.
  void prepare(int64_t num_rows);

  int64_t in_features() const;
  int64_t out_features() const;
  size_t weight_bytes() const;  // bytes of one packed copy of the weights (roofline reports)
  LinearBackend backend() const;  // the one in use (never kAuto)
  // The kernel in use, e.g. "fma512", "amx", "vnni512", "onednn".
  std::string kernel_name() const;

 private:
  Linear() = default;  // shared_view fills impl_

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

namespace reference {
// Scalar reference of Linear::forward. For compute = bf16, rounds x and W to bf16 first.
void linear(const float* x, const float* weight, const float* bias, float* y, int64_t num_rows,
            int64_t out_features, int64_t in_features, DType compute);
}  // namespace reference

}  // namespace dspark
