// Instruction-set levels of the matmul kernels, detected once from CPUID, and the
// process-wide cap that forces a lower level (--isa, DSPARK_ISA).
//
// One binary runs on any x86-64 CPU with AVX2 + FMA + F16C. The matmul kernels of each
// level live in their own translation units (kernels/isa/*), compiled for that level only;
// which one runs is decided here, at run time, never by the compiler's -march.
//
// Levels, in the order a cap counts them (a cap at L allows every level <= L that the CPU
// has; on a CPU with VNNI but no BF16 or AVX-VNNI the cap `vnni` allows avx2, avx512 and
// vnni):
//   avx2        AVX2, FMA, F16C (256-bit FMA kernels)
//   avxvnni     + AVX-VNNI (256-bit vpdpbusd, int8 weights: Intel's cores since Alder Lake,
//               which have no AVX-512; AMD's since Zen 5)
//   avx512      AVX-512 F/BW/VL/DQ with the OS saving zmm state (512-bit FMA kernels)
//   avx512bf16  + AVX512_BF16 (vdpbf16ps)
//   vnni        + AVX512_VNNI (vpdpbusd, int8 weights)
//   avx512fp16  + AVX512_FP16 (vfmadd231ph for bf16 weights, PackedBf16Gemm's kFp16)
//   amx         AMX tiles for bf16 and int8, granted by the kernel (arch_prctl)
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dspark {

enum class Isa : uint8_t { kAvx2, kAvxVnni, kAvx512, kAvx512Bf16, kVnni, kAvx512Fp16, kAmx };
inline constexpr size_t kNumIsas = 7;  // the levels above, for tables indexed by Isa

// "avx2", "avxvnni", "avx512", "avx512bf16", "vnni", "avx512fp16", "amx"
std::string_view isa_name(Isa isa);
// The level whose isa_name is `name`, whether or not this CPU has it; nullopt for any other.
std::optional<Isa> find_isa(std::string_view name);

// True when this CPU and OS can run kernels of `isa`.
bool isa_supported(Isa isa);
// The highest supported level.
Isa best_isa();

// "auto" gives best_isa(). Throws a one-line Error for an unknown name or a level this CPU
// lacks (naming what it lacks and what it has), so a forced path never ends in SIGILL.
Isa parse_isa(std::string_view name);

// The process-wide cap: DSPARK_ISA (a name as above) when set at first use, else
// best_isa(). Kernels read it when they are constructed, so set it before loading a model.
Isa active_isa();
void set_active_isa(Isa isa);  // throws when !isa_supported(isa)

// True when kernels of `level` may run now: level <= active_isa() and the CPU has it.
bool isa_allowed(Isa level);

// Caps the process at `isa` while it lives (tests, benchmarks), then restores the cap it found.
class ScopedIsaCap {
 public:
  explicit ScopedIsaCap(Isa isa) : saved_(active_isa()) { set_active_isa(isa); }
  ~ScopedIsaCap() { set_active_isa(saved_); }
  ScopedIsaCap(const ScopedIsaCap&) = delete;
  ScopedIsaCap& operator=(const ScopedIsaCap&) = delete;

 private:
  Isa saved_;
};

// The CPU's relevant features as one line, e.g. "avx2 fma f16c avx512f ... amx-bf16".
std::string cpu_feature_list();

}  // namespace dspark
