#include "kernels/linear.h"

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <dnnl.hpp>

#include "core/aligned_buffer.h"
#include "core/check.h"
#include "kernels/packed_bf16_gemm.h"
#include "kernels/packed_f32_gemm.h"
#include "kernels/packed_int8_gemm.h"
#include "kernels/simd.h"

namespace dspark {
namespace {

using dnnl::memory;
using Dt = memory::data_type;
using Tag = memory::format_tag;

// One CPU engine per process: engines are cheap to share and costly to create. Before it,
// oneDNN is capped at AVX-512 BF16 (see linear.h: its AMX kernels are not batch invariant).
// The ISA cap (kernels/isa.h) is not passed on: oneDNN's AVX2 f32 and bf16 matmuls were
// measured not batch invariant, so the f32 path keeps oneDNN's own CPUID choice.
dnnl::engine& cpu_engine() {
  static dnnl::engine engine = [] {
    dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx512_core_bf16);  // fails harmlessly if too late
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return engine;
}

// True when oneDNN may use AMX in this process (the cap above did not apply).
bool onednn_may_use_amx() {
  cpu_engine();
  return dnnl::get_effective_cpu_isa() == dnnl::cpu_isa::avx512_core_amx;
}

LinearBackend resolve(LinearBackend backend, DType compute, WeightQuantization quantization) {
  if (backend != LinearBackend::kAuto) return backend;
  if (quantization != WeightQuantization::kNone) return LinearBackend::kPackedInt8;
  return compute == DType::kBF16 ? LinearBackend::kPackedBf16 : LinearBackend::kPackedF32;
}

// oneDNN's matmul is batch invariant only on its AVX-512 kernels: below that, its f32
// gemm:jit takes another path at M = 1 (measured on an AVX2-only EPYC). bf16 also needs
// AVX512_BF16: without it (an Intel Xeon, CPU model 207, that reports AVX512_VNNI but not
// AVX512_BF16), bf16 rows differed between M = 1 and M = 2 and between 1 and 2 threads.
bool onednn_batch_invariant(DType compute) {
  cpu_engine();
  const auto isa = dnnl::get_effective_cpu_isa();
  const bool bf16 = isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
  if (compute == DType::kBF16) return bf16;
  return bf16 || isa == dnnl::cpu_isa::avx512_core || isa == dnnl::cpu_isa::avx512_core_vnni;
}

// Executes through the C API with a fixed argument array: the C++ execute() builds an
// unordered_map per call, which would allocate in the step loop.
void execute(const dnnl::primitive& prim, const dnnl::stream& stream, const dnnl_exec_arg_t* args,
             int num_args) {
  const dnnl_status_t status = dnnl_primitive_execute(prim.get(), stream.get(), num_args, args);
  DSPARK_CHECK(status == dnnl_success, "oneDNN matmul execution failed (status {})",
               static_cast<int>(status));
}

}  // namespace

struct Linear::Impl {
  int64_t out = 0;
  int64_t in = 0;
  LinearOptions options;
  bool has_bias = false;

  // kOneDnn --------------------------------------------------------------------------
  dnnl::stream stream;
  struct PackedWeights {
    memory::desc desc;
    memory mem;
  };
  // Distinct packed layouts (oneDNN has used one for every M measured; a second would be
  // made by reordering the first, which is exact since the dtype is the same).
  std::vector<PackedWeights> packed;
  struct RowsPrimitive {
    std::optional<dnnl::matmul> prim;
    size_t packed_index = 0;
    memory src;         // [rows, in] compute dtype; handle set per call for f32
    memory dst;         // [rows, out] f32; handle set per call
    memory scratchpad;  // view of the shared scratchpad buffer
  };
  std::vector<RowsPrimitive> by_rows;  // [max_rows + 1], index = M
  // The oneDNN implementation every row count uses. oneDNN's own choice varies with M
  // (measured on a machine with AMX: avx512_core_bf16 brgemm at M = 1, AMX brgemm from
  // M = 2, whose rows differ in the last bits), so one is pinned for all M.
  std::string implementation;
  memory bias_mem;                     // [1, out] f32
  AlignedBuffer bias_values;           // [out]
  AlignedBuffer scratchpad;            // largest scratchpad of the primitives made so far

  // kPackedBf16, kPackedInt8, kPackedF32 -----------------------------------------------
  std::optional<PackedBf16Gemm> packed_bf16;
  std::optional<PackedInt8Gemm> packed_int8;
  std::optional<PackedF32Gemm> packed_f32;

  // kOneDnn bf16: x rounded to bf16, [max_rows, in].
  AlignedBuffer x_bf16;

  Impl(const Int8Weights& weight, std::span<const float> bias, const LinearOptions& opts)
      : out(weight.out), in(weight.in), options(opts), has_bias(!bias.empty()) {
    DSPARK_CHECK(options.max_rows >= 1, "Linear: max_rows must be >= 1, got {}", options.max_rows);
    options.backend = LinearBackend::kPackedInt8;
    options.quantization = weight.bits == 4 ? WeightQuantization::kInt4 : WeightQuantization::kInt8;
    packed_int8.emplace(weight, bias, options.max_rows);
  }

  // A view: `source`'s packed weights, scratch and primitives of its own (see shared_view).
  Impl(const Impl& source, int64_t max_rows)
      : out(source.out), in(source.in), options(source.options), has_bias(source.has_bias) {
    DSPARK_CHECK(max_rows >= 1, "Linear: max_rows must be >= 1, got {}", max_rows);
    options.max_rows = max_rows;
    if (source.packed_bf16) {
      packed_bf16.emplace(*source.packed_bf16, max_rows);
      return;
    }
    if (source.packed_int8) {
      packed_int8.emplace(*source.packed_int8, max_rows);
      return;
    }
    if (source.packed_f32) {
      packed_f32.emplace(*source.packed_f32, max_rows);
      return;
    }
    // oneDNN: memory objects are reference-counted handles, so copying them shares the
    // packed buffers. The implementation is pinned for the view's own row range, as for
    // any Linear; a layout it needs that the source has not is reordered from the shared
    // one (exact) into a buffer of the view's own.
    stream = dnnl::stream(cpu_engine());
    if (options.compute == DType::kBF16) {
      x_bf16 = AlignedBuffer(static_cast<size_t>(options.max_rows * in) * sizeof(uint16_t));
    }
    if (has_bias) {
      bias_values = AlignedBuffer(static_cast<size_t>(out) * sizeof(float));
      std::memcpy(bias_values.data(), source.bias_values.data(), static_cast<size_t>(out) * sizeof(float));
      bias_mem = memory({{1, out}, Dt::f32, Tag::ab}, cpu_engine(), bias_values.data());
    }
    by_rows.resize(static_cast<size_t>(options.max_rows) + 1);
    implementation = choose_implementation();
    packed = source.packed;
    make_primitive(1, primitive_desc(1));
  }

  Impl(std::span<const float> weight, int64_t out_features, int64_t in_features,
       std::span<const float> bias, const LinearOptions& opts)
      : out(out_features), in(in_features), options(opts), has_bias(!bias.empty()) {
    DSPARK_CHECK(out > 0 && in > 0, "Linear: bad shape out={} in={}", out, in);
    DSPARK_CHECK(static_cast<int64_t>(weight.size()) == out * in,
                 "Linear: weight has {} values, expected out*in = {}*{} = {}", weight.size(), out, in,
                 out * in);
    DSPARK_CHECK(bias.empty() || static_cast<int64_t>(bias.size()) == out,
                 "Linear: bias has {} values, expected {}", bias.size(), out);
    DSPARK_CHECK(options.compute == DType::kBF16 || options.compute == DType::kF32,
                 "Linear: compute dtype must be bf16 or f32, got {}", dtype_name(options.compute));
    DSPARK_CHECK(options.max_rows >= 1, "Linear: max_rows must be >= 1, got {}", options.max_rows);

    options.backend = resolve(options.backend, options.compute, options.quantization);
    DSPARK_CHECK((options.backend == LinearBackend::kPackedInt8) == (options.quantization != WeightQuantization::kNone),
                 "Linear: int8 and int4 weights go with backend kPackedInt8 and only with it");
    if (options.backend == LinearBackend::kPackedInt8) {
      const int bits = options.quantization == WeightQuantization::kInt4 ? 4 : 8;
      packed_int8.emplace(quantize_int8_weights(weight.data(), out, in, bits), bias, options.max_rows);
      return;
    }
    if (options.backend == LinearBackend::kPackedBf16) {
      DSPARK_CHECK(options.compute == DType::kBF16, "Linear: backend kPackedBf16 needs compute = bf16");
      packed_bf16.emplace(weight.data(), out, in, bias, options.max_rows);
      return;
    }
    if (options.backend == LinearBackend::kPackedF32) {
      DSPARK_CHECK(options.compute == DType::kF32, "Linear: backend kPackedF32 needs compute = f32");
      packed_f32.emplace(weight.data(), out, in, bias, options.max_rows);
      return;
    }

    DSPARK_CHECK(onednn_batch_invariant(options.compute),
                 "Linear: oneDNN's {} matmul on this CPU ({}) is not batch invariant; use the packed kernels "
                 "(LinearBackend::kAuto)", dtype_name(options.compute),
                 options.compute == DType::kBF16 ? "no AVX512_BF16" : "no AVX-512");
    auto& engine = cpu_engine();
    DSPARK_CHECK(options.compute != DType::kBF16 || !onednn_may_use_amx(),
                 "Linear: oneDNN may use AMX in this process (its ISA cap was set too late or "
                 "ONEDNN_MAX_CPU_ISA allows it); bf16 rows would not be batch invariant. Use "
                 "LinearBackend::kPackedBf16 or set ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16");
    stream = dnnl::stream(engine);
    if (options.compute == DType::kBF16) {
      x_bf16 = AlignedBuffer(static_cast<size_t>(options.max_rows * in) * sizeof(uint16_t));
    }
    if (has_bias) {
      bias_values = AlignedBuffer(static_cast<size_t>(out) * sizeof(float));
      std::memcpy(bias_values.data(), bias.data(), static_cast<size_t>(out) * sizeof(float));
      bias_mem = memory({{1, out}, Dt::f32, Tag::ab}, engine, bias_values.data());
    }
    by_rows.resize(static_cast<size_t>(options.max_rows) + 1);

    implementation = choose_implementation();
    // Pack W once, in the layout the M = 1 primitive asks for. W[out, in] row-major is the
    // matmul's [in, out] weights in "ba" order, so no transpose copy is needed.
    const auto pd = primitive_desc(1);
    memory w_user({{in, out}, Dt::f32, Tag::ba}, engine, const_cast<float*>(weight.data()));
    PackedWeights first{pd.weights_desc(), memory(pd.weights_desc(), engine)};
    dnnl::reorder(w_user, first.mem).execute(stream, w_user, first.mem);
    stream.wait();
    packed.push_back(std::move(first));
    make_primitive(1, pd);
  }

  Dt compute_dt() const { return options.compute == DType::kBF16 ? Dt::bf16 : Dt::f32; }

  // oneDNN's first choice at the largest M (prefill speed), if M = 1 offers it too;
  // otherwise the first implementation of M = max_rows that M = 1 offers.
  std::string choose_implementation() const {
    auto large = any_primitive_desc(options.max_rows);
    do {
      const std::string name = large.impl_info_str();
      auto small = any_primitive_desc(1);
      do {
        if (small.impl_info_str() == name) return name;
      } while (small.next_impl());
    } while (large.next_impl());
    DSPARK_FAIL("Linear: oneDNN offers no matmul implementation for both M = 1 and M = {} "
                "(shape [{}, {}], {})", options.max_rows, out, in, dtype_name(options.compute));
  }

  // The pinned implementation for `rows` rows.
  dnnl::matmul::primitive_desc primitive_desc(int64_t rows) const {
    auto pd = any_primitive_desc(rows);
    while (pd.impl_info_str() != implementation)
      DSPARK_CHECK(pd.next_impl(), "Linear: oneDNN implementation '{}' is not offered for M = {} "
                   "(shape [{}, {}]); rows would not be batch invariant", implementation, rows, out, in);
    return pd;
  }

  // oneDNN's list of implementations for `rows` rows, positioned on its first choice.
  dnnl::matmul::primitive_desc any_primitive_desc(int64_t rows) const {
    const memory::desc src({rows, in}, compute_dt(), Tag::ab);
    const memory::desc weights({in, out}, compute_dt(), Tag::any);
    const memory::desc dst({rows, out}, Dt::f32, Tag::ab);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (has_bias) {
      const memory::desc bias_desc({1, out}, Dt::f32, Tag::ab);
      return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, bias_desc, dst), attr,
                                          cpu_engine());
    }
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, dst), attr, cpu_engine());
  }

  void make_primitive(int64_t rows, const dnnl::matmul::primitive_desc& pd) {
    auto& engine = cpu_engine();
    RowsPrimitive& entry = by_rows[static_cast<size_t>(rows)];
    // Find (or make) the packed copy in this primitive's weights layout.
    size_t index = 0;
    while (index < packed.size() && packed[index].desc != pd.weights_desc()) ++index;
    if (index == packed.size()) {
      PackedWeights extra{pd.weights_desc(), memory(pd.weights_desc(), engine)};
      dnnl::reorder(packed[0].mem, extra.mem).execute(stream, packed[0].mem, extra.mem);
      stream.wait();
      packed.push_back(std::move(extra));
    }
    entry.packed_index = index;
    // Scratchpad: one buffer shared by all row counts (calls never overlap).
    const size_t need = pd.scratchpad_desc().get_size();
    if (need > scratchpad.size()) {
      scratchpad = AlignedBuffer(need);
      for (auto& other : by_rows)
        if (other.prim) other.scratchpad.set_data_handle(scratchpad.data());
    }
    entry.scratchpad = memory(pd.scratchpad_desc(), engine, scratchpad.data());
    void* src_handle = options.compute == DType::kBF16 ? x_bf16.data() : nullptr;
    entry.src = memory(pd.src_desc(), engine, src_handle);
    entry.dst = memory(pd.dst_desc(), engine, nullptr);
    entry.prim.emplace(pd);
  }

  void prepare(int64_t rows) {
    DSPARK_CHECK(rows >= 1 && rows <= options.max_rows, "Linear: num_rows {} outside [1, {}]", rows,
                 options.max_rows);
    if (packed_bf16 || packed_int8 || packed_f32 || by_rows[static_cast<size_t>(rows)].prim) return;
    make_primitive(rows, primitive_desc(rows));
  }

  void forward(const float* x, float* y, int64_t rows) {
    DSPARK_CHECK(rows >= 1 && rows <= options.max_rows, "Linear: num_rows {} outside [1, {}]", rows,
                 options.max_rows);
    if (packed_bf16) return packed_bf16->multiply(x, y, rows);
    if (packed_int8) return packed_int8->multiply(x, y, rows);
    if (packed_f32) return packed_f32->multiply(x, y, rows);
    if (options.compute == DType::kBF16) simd::f32_to_bf16(x, x_bf16.as<uint16_t>(), rows * in);
    RowsPrimitive& entry = by_rows[static_cast<size_t>(rows)];
    if (!entry.prim) make_primitive(rows, primitive_desc(rows));
    if (options.compute == DType::kF32) entry.src.set_data_handle(const_cast<float*>(x));
    entry.dst.set_data_handle(y);
    dnnl_exec_arg_t args[5] = {
        {DNNL_ARG_SRC, entry.src.get()},
        {DNNL_ARG_WEIGHTS, packed[entry.packed_index].mem.get()},
        {DNNL_ARG_DST, entry.dst.get()},
        {DNNL_ARG_SCRATCHPAD, entry.scratchpad.get()},
        {DNNL_ARG_BIAS, has_bias ? bias_mem.get() : nullptr},
    };
    execute(*entry.prim, stream, args, has_bias ? 5 : 4);
    stream.wait();
  }
};

Linear::Linear(std::span<const float> weight, int64_t out_features, int64_t in_features,
               std::span<const float> bias, const LinearOptions& options)
    : impl_(std::make_unique<Impl>(weight, out_features, in_features, bias, options)) {}

Linear::Linear(const Int8Weights& weight, std::span<const float> bias, const LinearOptions& options)
    : impl_(std::make_unique<Impl>(weight, bias, options)) {}
Linear::~Linear() = default;

Linear Linear::shared_view(int64_t max_rows) const {
  Linear view;
  view.impl_ = std::make_unique<Impl>(*impl_, max_rows);
  return view;
}

Linear::Linear(Linear&&) noexcept = default;
Linear& Linear::operator=(Linear&&) noexcept = default;

void Linear::forward(const float* x, float* y, int64_t num_rows) { impl_->forward(x, y, num_rows); }
void Linear::prepare(int64_t num_rows) { impl_->prepare(num_rows); }
int64_t Linear::in_features() const { return impl_->in; }
int64_t Linear::out_features() const { return impl_->out; }
LinearBackend Linear::backend() const { return impl_->options.backend; }

size_t Linear::weight_bytes() const {
  if (impl_->packed_bf16) return impl_->packed_bf16->weight_bytes();
  if (impl_->packed_int8) return impl_->packed_int8->weight_bytes();
  if (impl_->packed_f32) return impl_->packed_f32->weight_bytes();
  return impl_->packed[0].desc.get_size();
}

bool Linear::shares_weights_with(const Linear& other) const {
  auto data = [](const Impl& i) -> const void* {
    if (i.packed_bf16) return i.packed_bf16->weights_data();
    if (i.packed_int8) return i.packed_int8->weights_data();
    if (i.packed_f32) return i.packed_f32->weights_data();
    return i.packed[0].mem.get_data_handle();
  };
  return data(*impl_) == data(*other.impl_);
}

std::string Linear::kernel_name() const {
  if (impl_->packed_bf16) return std::string(bf16_kernel_name(impl_->packed_bf16->kernel()));
  if (impl_->packed_int8) return std::string(int8_kernel_name(impl_->packed_int8->kernel()));
  if (impl_->packed_f32) return std::string(f32_kernel_name(impl_->packed_f32->kernel()));
  return "onednn";
}

bool linear_backend_supported(LinearBackend backend, DType compute) {
  switch (backend) {
    case LinearBackend::kAuto: return true;
    case LinearBackend::kOneDnn: return onednn_batch_invariant(compute);
    case LinearBackend::kPackedBf16: return compute == DType::kBF16;
    case LinearBackend::kPackedF32: return compute == DType::kF32;
    case LinearBackend::kPackedInt8: return true;
  }
  return false;
}

std::string_view quantization_name(WeightQuantization q) {
  switch (q) {
    case WeightQuantization::kInt8: return "int8";
    case WeightQuantization::kInt4: return "int4";
    default: return "none";
  }
}

WeightQuantization parse_quantization(std::string_view name) {
  if (name == "none") return WeightQuantization::kNone;
  if (name == "int8") return WeightQuantization::kInt8;
  if (name == "int4") return WeightQuantization::kInt4;
  DSPARK_FAIL("unknown quantization '{}' (expected none, int8 or int4)", name);
}

}  // namespace dspark
