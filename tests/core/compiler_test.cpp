// Guards against a GCC 12.2 AVX-512 miscompile of straight-line vector code (SLP
// vectorisation), disabled in CMakeLists.txt: with it, the initializer below came out as
// {1, 1, 1, 1} at -O2 -march=native.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace {

__attribute__((noinline)) double sum_weighted(const std::vector<double>& q, const std::vector<uint8_t>& t) {
  double s = 0;
  for (size_t i = 0; i < q.size(); ++i) s += q[i] * (1 + t[i]);
  return s;
}

TEST(Compiler, InitializerListsOfDoublesKeepTheirValues) {
  const std::vector<double> q = {1.0, 1.0, 0.0, 0.0};
  const std::vector<uint8_t> t = {1, 1, 0, 0};
  EXPECT_EQ(q, (std::vector<double>{1.0, 1.0, 0.0, 0.0}));
  EXPECT_EQ(q[2], 0.0);
  EXPECT_EQ(q[3], 0.0);
  EXPECT_DOUBLE_EQ(sum_weighted(q, t), 4.0);
}

}  // namespace
