#include "kernels/isa.h"

#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "core/check.h"

namespace dspark {
namespace {

TEST(Isa, NamesRoundTripForEverySupportedLevel) {
  for (Isa isa : {Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512, Isa::kAvx512Bf16, Isa::kVnni, Isa::kAvx512Fp16, Isa::kAmx}) {
    EXPECT_EQ(find_isa(isa_name(isa)), std::optional<Isa>(isa));  // whether or not this CPU has it
    if (!isa_supported(isa)) continue;
    EXPECT_EQ(parse_isa(isa_name(isa)), isa);
  }
  EXPECT_EQ(parse_isa("auto"), best_isa());
  EXPECT_EQ(find_isa("auto"), std::nullopt);  // a request, not a level
  EXPECT_EQ(find_isa("avx512_bf16"), std::nullopt);
  EXPECT_TRUE(isa_supported(best_isa()));
  EXPECT_TRUE(isa_supported(Isa::kAvx2));  // dspark's floor
}

TEST(Isa, UnsupportedOrUnknownIsAOneLineError) {
  try {
    parse_isa("sse2");
    FAIL() << "accepted sse2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown ISA 'sse2'"), std::string::npos) << e.what();
  }
  for (Isa isa : {Isa::kAvxVnni, Isa::kAvx512, Isa::kAvx512Bf16, Isa::kVnni, Isa::kAvx512Fp16, Isa::kAmx}) {
    if (isa_supported(isa)) continue;
    try {
      parse_isa(isa_name(isa));
      FAIL() << "accepted " << isa_name(isa);
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("this CPU lacks"), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

TEST(Isa, CapAllowsOnlyLevelsAtOrBelowIt) {
  const Isa saved = active_isa();
  set_active_isa(Isa::kAvx2);
  EXPECT_TRUE(isa_allowed(Isa::kAvx2));
  EXPECT_FALSE(isa_allowed(Isa::kAvx512));
  EXPECT_FALSE(isa_allowed(Isa::kAmx));
  set_active_isa(best_isa());
  EXPECT_TRUE(isa_allowed(best_isa()));
  set_active_isa(saved);
  EXPECT_FALSE(cpu_feature_list().empty());
}

}  // namespace
}  // namespace dspark
