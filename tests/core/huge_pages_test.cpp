#include "core/huge_pages.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/aligned_buffer.h"

namespace dspark {
namespace {

bool all_equal(const std::byte* p, size_t n, std::byte value) {
  return std::all_of(p, p + n, [value](std::byte b) { return b == value; });
}

TEST(HugePages, SlicesAreAlignedZeroedAndDisjoint) {
  const std::vector<size_t> sizes = {1, 63, 64, 65, 1000, size_t{1} << 20, 3 << 20, 100};
  std::vector<HugePageSlice> slices;
  for (size_t i = 0; i < sizes.size(); ++i) {
    slices.push_back(take_huge_page_slice(sizes[i]));
    const HugePageSlice& s = slices.back();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(s.data) % 64, 0u) << "slice " << i;
    EXPECT_TRUE(all_equal(s.data, sizes[i], std::byte{0})) << "slice " << i << " not zeroed";
    std::fill(s.data, s.data + sizes[i], static_cast<std::byte>(i + 1));
  }
  for (size_t i = 0; i < sizes.size(); ++i)  // no later slice wrote over an earlier one
    EXPECT_TRUE(all_equal(slices[i].data, sizes[i], static_cast<std::byte>(i + 1))) << "slice " << i;
}

TEST(HugePages, SlicesFromManyThreadsDoNotOverlap) {
  constexpr int kThreads = 4, kSlices = 300;
  std::vector<std::vector<std::pair<HugePageSlice, size_t>>> taken(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&taken, t] {
      for (int i = 0; i < kSlices; ++i) {
        const size_t n = 1 + static_cast<size_t>((i * 7919 + t * 104729) % 50000);
        HugePageSlice s = take_huge_page_slice(n);
        std::fill(s.data, s.data + n, static_cast<std::byte>(t + 1));
        taken[t].emplace_back(std::move(s), n);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t)
    for (const auto& [s, n] : taken[t]) ASSERT_TRUE(all_equal(s.data, n, static_cast<std::byte>(t + 1)));
}

TEST(HugePages, ASliceKeepsItsRegionAndTheReportFollowsIt) {
  const size_t before = huge_page_report().resident_bytes;
  constexpr size_t kBig = size_t{20} << 20;  // over half a region: a region of its own
  HugePageSlice big = take_huge_page_slice(kBig);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big.data) % (size_t{2} << 20), 0u);
  const HugePageReport with = huge_page_report();
  EXPECT_GE(with.resident_bytes, before + kBig);
  EXPECT_LE(with.huge_bytes, with.resident_bytes);
  std::shared_ptr<void> region = big.region;
  big = {};
  // Other regions' residency can only grow meanwhile (the kernel may collapse a partly
  // touched 2 MB range into a huge page), so the checks are bounds.
  EXPECT_GE(huge_page_report().resident_bytes, with.resident_bytes);  // `region` still holds it
  region.reset();
  EXPECT_LT(huge_page_report().resident_bytes + kBig / 2, with.resident_bytes);  // and now it is gone
}

// The kernel's count of huge-page faults that fell back to 4 KB pages (no free 2 MB page).
int64_t huge_page_fallbacks() {
  std::ifstream vmstat("/proc/vmstat");
  std::string name;
  int64_t value = 0;
  while (vmstat >> name >> value)
    if (name == "thp_fault_fallback") return value;
  return 0;
}

// Where the kernel offers transparent huge pages for advised memory, the regions get them.
TEST(HugePages, RegionsAreInHugePagesWhereTheKernelAllowsThem) {
  const std::string mode = huge_page_report().mode;
  if (mode != "madvise" && mode != "always") GTEST_SKIP() << "transparent huge pages: '" << mode << "'";
  const size_t before = huge_page_report().huge_bytes;
  const int64_t fallbacks = huge_page_fallbacks();
  HugePageSlice big = take_huge_page_slice(size_t{20} << 20);
  if (huge_page_report().huge_bytes == before && huge_page_fallbacks() > fallbacks)
    GTEST_SKIP() << "the kernel asked for 2 MB pages but had none free";
  EXPECT_GT(huge_page_report().huge_bytes, before) << "no 2 MB page placed under mode " << mode;
}

TEST(HugePages, AlignedBufferInHugePagesMovesItsSlice) {
  AlignedBuffer a = AlignedBuffer::in_huge_pages(5000);
  ASSERT_NE(a.data(), nullptr);
  EXPECT_EQ(a.size(), 5000u);
  EXPECT_TRUE(all_equal(a.data(), 5000, std::byte{0}));
  a.data()[4999] = std::byte{7};
  std::byte* data = a.data();
  AlignedBuffer b(std::move(a));
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(a.data(), nullptr);
  AlignedBuffer c(64);  // an ordinary buffer, replaced by the slice: freed, not leaked
  c = std::move(b);
  EXPECT_EQ(c.data(), data);
  EXPECT_EQ(c.data()[4999], std::byte{7});
  EXPECT_EQ(AlignedBuffer::in_huge_pages(0).data(), nullptr);
}

}  // namespace
}  // namespace dspark
