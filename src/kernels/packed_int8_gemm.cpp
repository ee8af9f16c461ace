#include "kernels/packed_int8_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/dtype.h"
#include "kernels/isa/int8_kernels.h"
#include "kernels/packed_common.h"

namespace dspark {
namespace {

using kernels::kInt8Block;
using kernels::kInt8Chunk;
using kernels::kInt8Group;
using kernels::kInt8GroupBlocks;

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// q = round(w / scale) within [-q_max, q_max] for the n weights of a block.
void quantize_block(const float* w, int64_t n, float scale, float q_max, int8_t* q) {
  for (int64_t k = 0; k < n; ++k) {
    const float v = scale > 0.0f ? std::nearbyint(w[k] / scale) : 0.0f;
    q[k] = static_cast<int8_t>(std::fmax(-q_max, std::fmin(q_max, v)));
  }
}

// The scale of a 4-bit block of n weights (amax > 0): 15 levels leave a coarse step, so
// scales amax / d for d = 7 to 9 by 1/8 are tried (past 7 the largest weights clip to ±7 and
// every other weight gets a finer step), each refit by least squares to its own q
// (Σ w q / Σ q²) and rounded to f16 (packed so, kernels/isa/int8_kernels.h), and the pair
// with the least squared error is kept.
// amax / 7 is the first candidate, so the result is never worse than it (up to the f16
// rounding). q: [n], the chosen values.
float search_4bit_scale(const float* w, int64_t n, float amax, int8_t* q) {
  int8_t trial[kInt8Chunk];
  double best_error = INFINITY;
  float best_scale = 0.0f;
  for (int step = 0; step <= 16; ++step) {
    quantize_block(w, n, amax / (7.0f + 0.125f * static_cast<float>(step)), 7.0f, trial);
    double wq = 0.0, qq = 0.0;
    for (int64_t k = 0; k < n; ++k) {
      wq += static_cast<double>(w[k]) * trial[k];
      qq += static_cast<double>(trial[k]) * trial[k];
    }
    const float scale = round_to_f16(static_cast<float>(wq / qq));  // qq > 0: the largest weight has |q| = 7
    DSPARK_CHECK(std::isfinite(scale), "quantize_int8_weights: a 4-bit scale of {} is past the f16 range",
                 wq / qq);
    double error = 0.0;
    for (int64_t k = 0; k < n; ++k) {
      const double e = static_cast<double>(w[k]) - static_cast<double>(trial[k]) * scale;
      error += e * e;
    }
    if (error < best_error) {
      best_error = error;
      best_scale = scale;
      std::copy(trial, trial + n, q);
    }
  }
  return best_scale;
}

static_assert(kInt8ScaleBlock == kInt8Chunk, "one weight scale per kernel chunk");

}  // namespace

std::string_view int8_kernel_name(Int8Kernel kernel) {
  switch (kernel) {
    case Int8Kernel::kBest: return "best";
    case Int8Kernel::kAvx2: return "avx2";
    case Int8Kernel::kAvxVnni: return "avxvnni";
    case Int8Kernel::kVnni512: return "vnni512";
    case Int8Kernel::kAmx: return "amx";
  }
  return "?";
}

Isa int8_kernel_isa(Int8Kernel kernel) {
  switch (kernel) {
    case Int8Kernel::kVnni512: return Isa::kVnni;
    case Int8Kernel::kAmx: return Isa::kAmx;
    case Int8Kernel::kAvxVnni: return Isa::kAvxVnni;
    default: return Isa::kAvx2;
  }
}

Int8Kernel best_int8_kernel(int bits) {
  if (bits == 8 && isa_allowed(Isa::kAmx)) return Int8Kernel::kAmx;
  if (isa_allowed(Isa::kVnni)) return Int8Kernel::kVnni512;
  return isa_allowed(Isa::kAvxVnni) ? Int8Kernel::kAvxVnni : Int8Kernel::kAvx2;
}

Int8Weights quantize_int8_weights(const float* weight, int64_t out, int64_t in, int bits) {
  DSPARK_CHECK(out > 0 && in > 0, "quantize_int8_weights: bad shape [{}, {}]", out, in);
  DSPARK_CHECK(bits == 8 || bits == 4, "quantize_int8_weights: bits must be 8 or 4, got {}", bits);
  const float q_max = bits == 8 ? 127.0f : 7.0f;
  const int64_t num_chunks = (in + kInt8Chunk - 1) / kInt8Chunk;
  Int8Weights w;
  w.out = out;
  w.in = in;
  w.bits = bits;
  w.q.resize(static_cast<size_t>(out * in));
  w.scales.resize(static_cast<size_t>(out * num_chunks));
  for (int64_t n = 0; n < out; ++n)
    for (int64_t ch = 0; ch < num_chunks; ++ch) {
      const int64_t k0 = ch * kInt8Chunk, k1 = std::min(in, k0 + kInt8Chunk);
      float amax = 0.0f;
      for (int64_t k = k0; k < k1; ++k) amax = std::fmax(amax, std::fabs(weight[n * in + k]));
      int8_t* q = w.q.data() + n * in + k0;
      if (bits == 4 && amax > 0.0f) {
        w.scales[n * num_chunks + ch] = search_4bit_scale(weight + n * in + k0, k1 - k0, amax, q);
        continue;
      }
      w.scales[n * num_chunks + ch] = amax / q_max;
      quantize_block(weight + n * in + k0, k1 - k0, amax / q_max, q_max, q);
    }
  return w;
}

PackedInt8Gemm::PackedInt8Gemm(const Int8Weights& weights, std::span<const float> bias, int64_t max_rows,
                               Int8Kernel kernel)
    : out_(weights.out),
      in_(weights.in),
      padded_in_(round_up(weights.in, kInt8Chunk)),
      num_groups_((weights.out + kInt8Group - 1) / kInt8Group),
      max_rows_(max_rows),
      bits_(weights.bits),
      kernel_(kernel == Int8Kernel::kBest ? best_int8_kernel(weights.bits) : kernel) {
  const int64_t num_chunks = padded_in_ / kInt8Chunk;
  kernels::check_packed_args("PackedInt8Gemm", out_, in_, bias, max_rows_);
  DSPARK_CHECK(bits_ == 8 || (bits_ == 4 && kernel_ != Int8Kernel::kAmx),
               "PackedInt8Gemm: {}-bit weights on kernel {} (4-bit weights run on vnni512, avxvnni or avx2)", bits_,
               int8_kernel_name(kernel_));
  const int q_max = bits_ == 8 ? 127 : 7;
  for (const int8_t q : weights.q)
    DSPARK_CHECK(q >= -q_max && q <= q_max, "PackedInt8Gemm: a {}-bit weight {} outside [-{}, {}]", bits_, q, q_max,
                 q_max);
  DSPARK_CHECK(static_cast<int64_t>(weights.q.size()) == out_ * in_ &&
                   static_cast<int64_t>(weights.scales.size()) == out_ * num_chunks,
               "PackedInt8Gemm: weights of [{}, {}] need {} values and {} scales, got {} and {}", out_, in_,
               out_ * in_, out_ * num_chunks, weights.q.size(), weights.scales.size());
  DSPARK_CHECK(isa_allowed(int8_kernel_isa(kernel_)), "PackedInt8Gemm: kernel {} needs ISA {} (active: {})",
               int8_kernel_name(kernel_), isa_name(int8_kernel_isa(kernel_)), isa_name(active_isa()));
  const int64_t group_record = kernels::int8_record_bytes(bits_, kInt8GroupBlocks);
  const int64_t block_bytes = kernels::int8_block_bytes(bits_);
  auto packed = std::make_shared<AlignedBuffer>(
      AlignedBuffer::in_huge_pages(static_cast<size_t>(num_groups_ * num_chunks * group_record)));
  std::memset(packed->data(), 0, packed->size());  // 4-bit bytes are filled a nibble at a time
  for (int64_t g = 0; g < num_groups_; ++g) {
    const int64_t blocks = out_ - g * kInt8Group > kInt8Block ? 2 : 1;
    const int64_t record_bytes = kernels::int8_record_bytes(bits_, blocks);
    for (int64_t ch = 0; ch < num_chunks; ++ch) {
      uint8_t* rec = packed->as<uint8_t>() + (g * num_chunks) * group_record + ch * record_bytes;
      uint8_t* scales = rec + blocks * block_bytes;  // [blocks][16] f32, or f16 for 4 bits
      for (int64_t b = 0; b < blocks; ++b)
        for (int64_t lane = 0; lane < kInt8Block; ++lane) {
          const int64_t n = g * kInt8Group + b * kInt8Block + lane;
          for (int64_t kk = 0; kk < kInt8Chunk; ++kk) {
            const int64_t k = ch * kInt8Chunk + kk;
            const int8_t q = n < out_ && k < in_ ? weights.q[n * in_ + k] : 0;
            const int64_t step = kk / 4, byte = lane * 4 + kk % 4;  // 8-bit vector `step`, its byte
            if (bits_ == 8) {
              rec[b * block_bytes + step * 64 + byte] = static_cast<uint8_t>(q + 128);
            } else {  // vector step / 2, the low nibble for an even step (int8_kernels.h)
              rec[b * block_bytes + step / 2 * 64 + byte] |= static_cast<uint8_t>((q + 8) << (step % 2 * 4));
            }
          }
          const float scale = n < out_ ? weights.scales[n * num_chunks + ch] : 0.0f;
          if (bits_ == 8) {
            reinterpret_cast<float*>(scales)[b * kInt8Block + lane] = scale;
          } else {  // f16: the value itself (the kernels divide by 16, kernels/isa/int8_kernels.h)
            DSPARK_CHECK(round_to_f16(scale) == scale, "PackedInt8Gemm: the 4-bit scale {} is not an f16 value",
                         scale);
            reinterpret_cast<uint16_t*>(scales)[b * kInt8Block + lane] = float_to_f16(scale);
          }
        }
    }
  }
  packed_ = std::move(packed);
  bias_ = kernels::padded_bias(bias, num_groups_ * kInt8Group);
  allocate_scratch();
}

PackedInt8Gemm::PackedInt8Gemm(const PackedInt8Gemm& source, int64_t max_rows)
    : out_(source.out_),
      in_(source.in_),
      padded_in_(source.padded_in_),
      num_groups_(source.num_groups_),
      max_rows_(max_rows),
      bits_(source.bits_),
      kernel_(source.kernel_),
      packed_(source.packed_),
      bias_(source.bias_) {
  DSPARK_CHECK(max_rows_ >= 1, "PackedInt8Gemm: max_rows must be >= 1, got {}", max_rows_);
  allocate_scratch();
}

void PackedInt8Gemm::allocate_scratch() {
  const int64_t num_chunks = padded_in_ / kInt8Chunk;
  x_q_ = AlignedBuffer(static_cast<size_t>(max_rows_ * padded_in_));
  x_scale_ = AlignedBuffer(static_cast<size_t>(max_rows_ * num_chunks) * sizeof(float));
  x_offset_ = AlignedBuffer(static_cast<size_t>(max_rows_ * num_chunks) * sizeof(float));
  if (kernel_ == Int8Kernel::kAvx2)
    x_sum_ = AlignedBuffer(static_cast<size_t>(max_rows_ * num_chunks) * sizeof(int32_t));
}

void PackedInt8Gemm::multiply(const float* x, float* y, int64_t num_rows) {
  DSPARK_CHECK(num_rows >= 1 && num_rows <= max_rows_, "PackedInt8Gemm: num_rows {} outside [1, {}]", num_rows,
               max_rows_);
  const kernels::PackedInt8View w{packed_->as<uint8_t>(), bias_->as<float>(), out_, in_, padded_in_, num_groups_,
                                  bits_};
  const kernels::Int8Activations a{x_q_.as<int8_t>(), x_scale_.as<float>(), x_offset_.as<float>()};
  switch (kernel_) {
    case Int8Kernel::kAmx: kernels::int8_gemm_amx(w, x, a, y, num_rows); break;
    case Int8Kernel::kVnni512: kernels::int8_gemm_vnni512(w, x, a, y, num_rows); break;
    case Int8Kernel::kAvxVnni: kernels::int8_gemm_avxvnni(w, x, a, y, num_rows); break;
    default: kernels::int8_gemm_avx2(w, x, a, x_sum_.as<int32_t>(), y, num_rows);
  }
}

namespace reference {

void int8_linear(const float* x, const Int8Weights& w, const float* bias, float* y, int64_t rows) {
  const int64_t padded_in = round_up(w.in, kInt8Chunk);
  const int64_t num_chunks = padded_in / kInt8Chunk;
  std::vector<int8_t> q(static_cast<size_t>(padded_in), 0);
  std::vector<float> t(static_cast<size_t>(num_chunks)), c(static_cast<size_t>(num_chunks));
  const int32_t weight_factor = w.bits == 8 ? 1 : 16;
  for (int64_t r = 0; r < rows; ++r) {
    kernels::quantize_int8_row(x + r * w.in, w.in, padded_in, 0, {q.data(), t.data(), c.data()});
    for (int64_t n = 0; n < w.out; ++n) {
      float acc = 0.0f;
      for (int64_t ch = 0; ch < num_chunks; ++ch) {
        int32_t u = 0;  // Σ (q_w + 128) q_x, as vpdpbusd accumulates it, q_w = 16 q for 4 bits
        for (int64_t k = ch * kInt8Chunk; k < std::min(w.in, (ch + 1) * kInt8Chunk); ++k)
          u += (w.q[n * w.in + k] * weight_factor + 128) * q[k];
        const float part = std::fma(static_cast<float>(u), t[ch], -c[ch]);
        acc = std::fma(part, w.scales[n * num_chunks + ch] / static_cast<float>(weight_factor), acc);
      }
      y[r * w.out + n] = acc + (bias != nullptr ? bias[n] : 0.0f);
    }
  }
}

}  // namespace reference
}  // namespace dspark
