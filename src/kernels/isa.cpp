#include "kernels/isa.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>

#include "core/check.h"

namespace dspark {
namespace {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false, avx_vnni = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512bf16 = false, avx512vnni = false, avx512fp16 = false;
  bool amx_tile = false, amx_bf16 = false, amx_int8 = false;
  bool os_ymm = false, os_zmm = false, os_amx = false;  // XCR0 state saved by the OS
};

uint64_t read_xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c >> 27) & 1;
  f.fma = (c >> 12) & 1;
  f.f16c = (c >> 29) & 1;
  if (osxsave) {
    const uint64_t xcr0 = read_xcr0();
    f.os_ymm = (xcr0 & 0x6) == 0x6;
    f.os_zmm = f.os_ymm && (xcr0 & 0xe0) == 0xe0;
    f.os_amx = (xcr0 & 0x60000) == 0x60000;  // XTILECFG, XTILEDATA
  }
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx2 = (b >> 5) & 1;
    f.avx512f = (b >> 16) & 1;
    f.avx512dq = (b >> 17) & 1;
    f.avx512bw = (b >> 30) & 1;
    f.avx512vl = (b >> 31) & 1;
    f.avx512vnni = (c >> 11) & 1;
    f.avx512fp16 = (d >> 23) & 1;
    f.amx_bf16 = (d >> 22) & 1;
    f.amx_tile = (d >> 24) & 1;
    f.amx_int8 = (d >> 25) & 1;
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
    f.avx_vnni = (a >> 4) & 1;
    f.avx512bf16 = (a >> 5) & 1;
  }
  return f;
}

const CpuFeatures& features() {
  static const CpuFeatures f = detect();
  return f;
}

// Linux hands out the AMX tile-data state only to processes that ask for it.
bool amx_permitted() {
  static const bool permitted = [] {
    constexpr long kArchReqXcompPerm = 0x1023;
    constexpr long kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return permitted;
}

// What `isa` needs that this CPU lacks ("" when nothing).
std::string missing_for(Isa isa) {
  const CpuFeatures& f = features();
  std::string missing;
  auto need = [&](bool have, const char* name) {
    if (!have) missing += missing.empty() ? name : std::string(", ") + name;
  };
  need(f.avx2, "AVX2");
  need(f.fma, "FMA");
  need(f.f16c, "F16C");
  need(f.os_ymm, "OS support for AVX state");
  if (isa == Isa::kAvx2) return missing;
  if (isa == Isa::kAvxVnni) {
    need(f.avx_vnni, "AVX-VNNI");
    return missing;
  }
  need(f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq, "AVX-512 F/BW/VL/DQ");
  need(f.os_zmm, "OS support for AVX-512 state");
  if (isa == Isa::kAvx512Bf16) need(f.avx512bf16, "AVX512_BF16");
  if (isa == Isa::kVnni) need(f.avx512vnni, "AVX512_VNNI");
  if (isa == Isa::kAvx512Fp16) need(f.avx512fp16, "AVX512_FP16");
  if (isa == Isa::kAmx) {
    need(f.avx512vnni, "AVX512_VNNI");  // the int8 AMX kernel leaves small products to vnni512
    need(f.amx_tile && f.amx_bf16 && f.amx_int8, "AMX-TILE/AMX-BF16/AMX-INT8");
    need(f.os_amx, "OS support for AMX state");
    if (missing.empty()) need(amx_permitted(), "the kernel's AMX permission (arch_prctl)");
  }
  return missing;
}

constexpr std::array kAllIsas = {Isa::kAvx2,       Isa::kAvxVnni,    Isa::kAvx512, Isa::kAvx512Bf16,
                                 Isa::kVnni,       Isa::kAvx512Fp16, Isa::kAmx};
static_assert(kAllIsas.size() == kNumIsas);

Isa initial_isa() {
  const char* env = std::getenv("DSPARK_ISA");
  if (env == nullptr || *env == '\0') return best_isa();
  try {
    return parse_isa(env);
  } catch (const Error& e) {
    DSPARK_FAIL("DSPARK_ISA={}: {}", env, e.message());
  }
}

std::atomic<int>& active_slot() {
  static std::atomic<int> slot{-1};  // -1: not yet read from DSPARK_ISA
  return slot;
}

}  // namespace

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kAvx2: return "avx2";
    case Isa::kAvxVnni: return "avxvnni";
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx512Bf16: return "avx512bf16";
    case Isa::kVnni: return "vnni";
    case Isa::kAvx512Fp16: return "avx512fp16";
    case Isa::kAmx: return "amx";
  }
  return "?";
}

bool isa_supported(Isa isa) {
  // Read on every dispatching kernel call: computed once.
  static const std::array<bool, kAllIsas.size()> supported = [] {
    std::array<bool, kAllIsas.size()> s{};
    for (Isa level : kAllIsas) s[static_cast<size_t>(level)] = missing_for(level).empty();
    return s;
  }();
  return supported[static_cast<size_t>(isa)];
}

Isa best_isa() {
  static const Isa best = [] {
    Isa found = Isa::kAvx2;
    for (Isa isa : kAllIsas)
      if (isa_supported(isa)) found = isa;
    return found;
  }();
  return best;
}

std::optional<Isa> find_isa(std::string_view name) {
  for (Isa isa : kAllIsas)
    if (isa_name(isa) == name) return isa;
  return std::nullopt;
}

Isa parse_isa(std::string_view name) {
  if (name == "auto") {
    DSPARK_CHECK(isa_supported(Isa::kAvx2), "this CPU lacks {}: dspark needs at least AVX2 + FMA + F16C",
                 missing_for(Isa::kAvx2));
    return best_isa();
  }
  if (const std::optional<Isa> isa = find_isa(name)) {
    const std::string missing = missing_for(*isa);
    DSPARK_CHECK(missing.empty(), "--isa {}: this CPU lacks {} (the best it supports is {})", name, missing,
                 isa_name(best_isa()));
    return *isa;
  }
  DSPARK_FAIL("unknown ISA '{}' (expected auto, avx2, avxvnni, avx512, avx512bf16, vnni, avx512fp16 or amx)", name);
}

Isa active_isa() {
  int v = active_slot().load();
  if (v < 0) {
    int expected = -1;
    active_slot().compare_exchange_strong(expected, static_cast<int>(initial_isa()));
    v = active_slot().load();
  }
  return static_cast<Isa>(v);
}

void set_active_isa(Isa isa) {
  const std::string missing = missing_for(isa);
  DSPARK_CHECK(missing.empty(), "ISA {}: this CPU lacks {}", isa_name(isa), missing);
  active_slot().store(static_cast<int>(isa));
}

bool isa_allowed(Isa level) { return level <= active_isa() && isa_supported(level); }

std::string cpu_feature_list() {
  const CpuFeatures& f = features();
  std::string s;
  auto add = [&](bool have, const char* name) {
    if (!have) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(f.avx2, "avx2");
  add(f.fma, "fma");
  add(f.f16c, "f16c");
  add(f.avx_vnni, "avx_vnni");
  add(f.avx512f, "avx512f");
  add(f.avx512bw, "avx512bw");
  add(f.avx512vl, "avx512vl");
  add(f.avx512dq, "avx512dq");
  add(f.avx512bf16, "avx512_bf16");
  add(f.avx512vnni, "avx512_vnni");
  add(f.avx512fp16, "avx512_fp16");
  add(f.amx_tile, "amx-tile");
  add(f.amx_bf16, "amx-bf16");
  add(f.amx_int8, "amx-int8");
  return s;
}

}  // namespace dspark
