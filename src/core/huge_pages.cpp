#include "core/huge_pages.h"

#include <sys/mman.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <new>
#include <string>

namespace dspark {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kRegionBytes = size_t{32} << 20;
constexpr size_t kSliceAlignment = 64;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// The open region: slices are cut from it in order until one does not fit.
struct Arena {
  std::mutex mutex;
  std::shared_ptr<std::byte> region;
  size_t used = 0, capacity = 0;  // bytes of `region`
};

// Every region alive, for the report. Its own mutex: a region's deleter runs wherever its
// last slice is dropped, the arena's lock held included (when `region` is replaced).
struct Registry {
  std::mutex mutex;
  std::map<uintptr_t, size_t> live;  // start -> bytes
};

// Never destroyed: slices may outlive static destructors.
Arena& arena() {
  static auto* instance = new Arena;
  return *instance;
}
Registry& registry() {
  static auto* instance = new Registry;
  return *instance;
}

std::shared_ptr<std::byte> new_region(size_t bytes) {
  auto* data = static_cast<std::byte*>(std::aligned_alloc(kHugePage, bytes));
  if (data == nullptr) throw std::bad_alloc();
  // Advice only: where transparent huge pages are off, the region is ordinary memory.
  madvise(data, bytes, MADV_HUGEPAGE);
  {
    const std::lock_guard<std::mutex> lock(registry().mutex);
    registry().live[reinterpret_cast<uintptr_t>(data)] = bytes;
  }
  return std::shared_ptr<std::byte>(data, [](std::byte* p) {
    {
      const std::lock_guard<std::mutex> lock(registry().mutex);
      registry().live.erase(reinterpret_cast<uintptr_t>(p));
    }
    std::free(p);
  });
}

}  // namespace

HugePageSlice take_huge_page_slice(size_t num_bytes) {
  const size_t bytes = round_up(num_bytes, kSliceAlignment);
  if (bytes > kRegionBytes / 2) {  // a region of its own; the current one stays open
    auto region = new_region(round_up(bytes, kHugePage));
    std::memset(region.get(), 0, bytes);
    return {region.get(), region};
  }
  Arena& a = arena();
  std::unique_lock<std::mutex> lock(a.mutex);
  if (!a.region || a.capacity - a.used < bytes) {
    a.region = new_region(kRegionBytes);
    a.capacity = kRegionBytes;
    a.used = 0;
  }
  HugePageSlice slice{a.region.get() + a.used, a.region};
  a.used += bytes;
  lock.unlock();
  std::memset(slice.data, 0, bytes);  // the first touch: the pages are placed here
  return slice;
}

HugePageReport huge_page_report() {
  HugePageReport report;
  std::ifstream mode_file("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string word;
  while (mode_file >> word)  // "always [madvise] never": the choice is bracketed
    if (word.size() > 2 && word.front() == '[' && word.back() == ']') report.mode = word.substr(1, word.size() - 2);
  std::map<uintptr_t, size_t> live;
  {
    const std::lock_guard<std::mutex> lock(registry().mutex);
    live = registry().live;
  }
  // smaps: a line "start-end perms ..." opens each mapping, its "Rss: N kB" and
  // "AnonHugePages: N kB" follow.
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " ", &start, &end) == 2) {
      auto it = live.upper_bound(start);  // the region starting at or before `start`
      inside = it != live.begin() && start < std::prev(it)->first + std::prev(it)->second;
      continue;
    }
    size_t kb = 0;
    if (!inside) continue;
    if (std::sscanf(line.c_str(), "Rss: %zu kB", &kb) == 1) report.resident_bytes += kb << 10;
    if (std::sscanf(line.c_str(), "AnonHugePages: %zu kB", &kb) == 1) report.huge_bytes += kb << 10;
  }
  return report;
}

}  // namespace dspark
