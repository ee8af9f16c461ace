#include "kernels/packed_bf16_gemm.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <mutex>
#include <vector>

#include "core/check.h"
#include "core/dtype.h"
#include "kernels/isa/bf16_kernels.h"
#include "kernels/packed_common.h"

namespace dspark {
namespace {

using kernels::kBf16Chunk;
using kernels::kBf16Group;

bool uses_bf16_input(Bf16Kernel k) { return k == Bf16Kernel::kDpbf16 || k == Bf16Kernel::kAmx; }

// The kFp16 kernel's exponent of each output (kernels/isa/bf16_kernels.h): its largest |bf16
// weight| x 2^-exponent lies in [1, 2) (0 for a row of zeros), so every weight fits fp16.
std::shared_ptr<const AlignedBuffer> fp16_out_exponents(const float* weight, int64_t out, int64_t in,
                                                        int64_t padded_out) {
  auto exponents = std::make_shared<AlignedBuffer>(static_cast<size_t>(padded_out) * sizeof(float));
  float* e = exponents->as<float>();  // zero-initialised
  for (int64_t n = 0; n < out; ++n) {
    float largest = 0.0f;
    for (int64_t k = 0; k < in; ++k) largest = std::max(largest, std::fabs(round_to_bf16(weight[n * in + k])));
    DSPARK_CHECK(std::isfinite(largest), "PackedBf16Gemm: output {} has a weight that is not finite", n);
    e[n] = largest > 0.0f ? std::floor(std::log2(largest)) : 0.0f;
  }
  return exponents;
}

// A [1536, 512] matrix at 8 rows under `kernel`, to time.
class KernelTrial {
 public:
  static constexpr int64_t kOut = 1536, kIn = 512, kRows = 8;
  explicit KernelTrial(Bf16Kernel kernel) : gemm_(weights().data(), kOut, kIn, {}, kRows, kernel) {}
  // Seconds per multiply, the best of a few repeats.
  double seconds() {
    double best = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < 8; ++i) gemm_.multiply(inputs().data(), y_.data(), kRows);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 8);
    }
    return best;
  }

 private:
  static std::vector<float> random(size_t n, uint32_t state) {
    std::vector<float> v(n);
    for (float& f : v) f = static_cast<float>((state = state * 1664525u + 1013904223u) >> 8) * 0x1p-24f - 0.5f;
    return v;
  }
  static const std::vector<float>& weights() {
    static const std::vector<float> w = random(static_cast<size_t>(kOut * kIn), 12345);
    return w;
  }
  static const std::vector<float>& inputs() {
    static const std::vector<float> x = random(static_cast<size_t>(kRows * kIn), 54321);
    return x;
  }
  PackedBf16Gemm gemm_;
  std::vector<float> y_ = std::vector<float>(static_cast<size_t>(kRows * kOut));
};

Bf16Kernel measure_best() {
  if (isa_allowed(Isa::kAmx)) return Bf16Kernel::kAmx;
  // Most preferred first: kFp16, whose sums are not f32 throughout, last.
  std::vector<Bf16Kernel> candidates;
  for (Bf16Kernel k : {Bf16Kernel::kDpbf16, Bf16Kernel::kFma512, Bf16Kernel::kFma256, Bf16Kernel::kFp16})
    if (isa_allowed(bf16_kernel_isa(k))) candidates.push_back(k);
  DSPARK_CHECK(!candidates.empty(), "no bf16 matmul kernel is allowed under ISA {}", isa_name(active_isa()));
  // Every candidate timed in turn, three rounds after one untimed (the first kernel timed
  // would otherwise pay for waking the thread team and faulting in pages), each keeping
  // its best.
  std::vector<std::unique_ptr<KernelTrial>> trials;
  for (Bf16Kernel k : candidates) trials.push_back(std::make_unique<KernelTrial>(k));
  std::vector<double> times(candidates.size(), 1e30);
  for (int round = 0; round < 4; ++round)
    for (size_t i = 0; i < trials.size(); ++i) {
      const double t = trials[i]->seconds();
      if (round > 0) times[i] = std::min(times[i], t);
    }
  // A more preferred kernel must be clearly slower to lose (10%), so noise does not flip
  // the choice between runs on the same machine.
  size_t best = candidates.size() - 1;
  double best_time = times[best];
  for (size_t i = best; i-- > 0;)
    if (times[i] < best_time * 1.1) {
      best = i;
      best_time = std::min(best_time, times[i]);
    }
  return candidates[best];
}

}  // namespace

std::string_view bf16_kernel_name(Bf16Kernel kernel) {
  switch (kernel) {
    case Bf16Kernel::kBest: return "best";
    case Bf16Kernel::kFma256: return "fma256";
    case Bf16Kernel::kFma512: return "fma512";
    case Bf16Kernel::kDpbf16: return "dpbf16";
    case Bf16Kernel::kAmx: return "amx";
    case Bf16Kernel::kFp16: return "fp16";
  }
  return "?";
}

Isa bf16_kernel_isa(Bf16Kernel kernel) {
  switch (kernel) {
    case Bf16Kernel::kFma512: return Isa::kAvx512;
    case Bf16Kernel::kDpbf16: return Isa::kAvx512Bf16;
    case Bf16Kernel::kAmx: return Isa::kAmx;
    case Bf16Kernel::kFp16: return Isa::kAvx512Fp16;
    default: return Isa::kAvx2;
  }
}

Bf16Kernel best_bf16_kernel() {
  static std::mutex mutex;
  static std::array<Bf16Kernel, kNumIsas> by_cap{};  // kBest = not measured yet
  const std::lock_guard lock(mutex);
  Bf16Kernel& slot = by_cap[static_cast<size_t>(active_isa())];
  if (slot == Bf16Kernel::kBest) slot = measure_best();
  return slot;
}

PackedBf16Gemm::PackedBf16Gemm(const float* weight, int64_t out_features, int64_t in_features,
                               std::span<const float> bias, int64_t max_rows, Bf16Kernel kernel)
    : out_(out_features),
      in_(in_features),
      padded_in_((in_features + kBf16Chunk - 1) / kBf16Chunk * kBf16Chunk),
      num_groups_((out_features + kBf16Group - 1) / kBf16Group),
      max_rows_(max_rows),
      kernel_(kernel == Bf16Kernel::kBest ? best_bf16_kernel() : kernel) {
  kernels::check_packed_args("PackedBf16Gemm", out_, in_, bias, max_rows_);
  DSPARK_CHECK(isa_allowed(bf16_kernel_isa(kernel_)), "PackedBf16Gemm: kernel {} needs ISA {} (active: {})",
               bf16_kernel_name(kernel_), isa_name(bf16_kernel_isa(kernel_)), isa_name(active_isa()));
  // A k-pair's two weights of an output side by side: a vdpbf16ps / AMX / vfmadd231ph operand.
  const auto slot = [](int64_t lane, int64_t e) { return lane * 2 + e; };
  if (kernel_ == Bf16Kernel::kFp16) {
    out_exponent_ = fp16_out_exponents(weight, out_, in_, num_groups_ * kBf16Group);
    std::vector<float> down(static_cast<size_t>(out_));  // 2^-exponent: the product below is exact
    for (int64_t n = 0; n < out_; ++n) down[n] = std::ldexp(1.0f, -static_cast<int>(out_exponent_->as<float>()[n]));
    packed_ = kernels::pack_tiles<uint16_t>(
        weight, out_, in_, [&down](float w, int64_t n) { return float_to_f16(round_to_bf16(w) * down[n]); }, slot);
  } else {
    packed_ = kernels::pack_tiles<uint16_t>(
        weight, out_, in_, [](float w, int64_t) { return float_to_bf16(w); }, slot);
  }
  bias_ = kernels::padded_bias(bias, num_groups_ * kBf16Group);
  allocate_scratch();
}

PackedBf16Gemm::PackedBf16Gemm(const PackedBf16Gemm& source, int64_t max_rows)
    : out_(source.out_),
      in_(source.in_),
      padded_in_(source.padded_in_),
      num_groups_(source.num_groups_),
      max_rows_(max_rows),
      kernel_(source.kernel_),
      packed_(source.packed_),
      bias_(source.bias_),
      out_exponent_(source.out_exponent_) {
  DSPARK_CHECK(max_rows_ >= 1, "PackedBf16Gemm: max_rows must be >= 1, got {}", max_rows_);
  allocate_scratch();
}

void PackedBf16Gemm::allocate_scratch() {
  if (kernel_ == Bf16Kernel::kFp16) {
    row_exponent_offset_ = (static_cast<size_t>(max_rows_ * padded_in_) * sizeof(uint16_t) + 63) / 64 * 64;
    scratch_ = AlignedBuffer(row_exponent_offset_ + static_cast<size_t>(max_rows_) * sizeof(float));
    return;
  }
  const int64_t scratch_rows = uses_bf16_input(kernel_) ? (max_rows_ + 31) / 32 * 32 : max_rows_;
  scratch_ = AlignedBuffer(static_cast<size_t>(scratch_rows * padded_in_) *
                           (uses_bf16_input(kernel_) ? sizeof(uint16_t) : sizeof(float)));
}

void PackedBf16Gemm::multiply(const float* x, float* y, int64_t num_rows) {
  DSPARK_CHECK(num_rows >= 1 && num_rows <= max_rows_, "PackedBf16Gemm: num_rows {} outside [1, {}]", num_rows,
               max_rows_);
  const kernels::PackedBf16View w{packed_->as<uint16_t>(),
                                  bias_->as<float>(),
                                  out_exponent_ != nullptr ? out_exponent_->as<float>() : nullptr,
                                  out_,
                                  in_,
                                  padded_in_,
                                  num_groups_};
  switch (kernel_) {
    case Bf16Kernel::kFma256: return kernels::bf16_gemm_fma256(w, x, scratch_.as<float>(), y, num_rows);
    case Bf16Kernel::kFma512: return kernels::bf16_gemm_fma512(w, x, scratch_.as<float>(), y, num_rows);
    case Bf16Kernel::kDpbf16: return kernels::bf16_gemm_dpbf16(w, x, scratch_.as<uint16_t>(), y, num_rows);
    case Bf16Kernel::kAmx: return kernels::bf16_gemm_amx(w, x, scratch_.as<uint16_t>(), y, num_rows);
    case Bf16Kernel::kFp16:
      return kernels::bf16_gemm_fp16(
          w, x, scratch_.as<uint16_t>(),
          reinterpret_cast<float*>(scratch_.data() + row_exponent_offset_), y, num_rows);
    case Bf16Kernel::kBest: break;
  }
  DSPARK_FAIL("PackedBf16Gemm: unresolved kernel");
}

}  // namespace dspark
