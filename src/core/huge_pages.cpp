#include "core/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
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

// Never destroyed: slices may outlive static destructors.
Arena& arena() {
  static auto* instance = new Arena;
  return *instance;
}

// A region is a mapping of its own, 2 MB-aligned (the ends of a larger mapping cut off) and
// advised for 2 MB pages: freed, it goes back to the kernel, and the advice (smaps' "hg")
// marks exactly the regions for huge_page_report.
std::shared_ptr<std::byte> new_region(size_t bytes) {
  const size_t span = bytes + kHugePage;
  void* mapped = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) throw std::bad_alloc();
  const auto first = reinterpret_cast<uintptr_t>(mapped);
  const uintptr_t start = round_up(first, kHugePage);
  if (start > first) munmap(mapped, start - first);
  if (first + span > start + bytes) munmap(reinterpret_cast<void*>(start + bytes), first + span - (start + bytes));
  auto* data = reinterpret_cast<std::byte*>(start);
  // Advice only: where transparent huge pages are off, the region is ordinary memory.
  madvise(data, bytes, MADV_HUGEPAGE);
  return std::shared_ptr<std::byte>(data, [bytes](std::byte* p) { munmap(p, bytes); });
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
  // Zero already (fresh pages, never cut twice); written now so that every page is in place
  // at load and the step loop never takes a page fault.
  std::memset(slice.data, 0, bytes);
  return slice;
}

HugePageReport huge_page_report() {
  HugePageReport report;
  std::ifstream mode_file("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string word;
  while (mode_file >> word)  // "always [madvise] never": the choice is bracketed
    if (word.size() > 2 && word.front() == '[' && word.back() == ']') report.mode = word.substr(1, word.size() - 2);
  // smaps: each mapping's lines, "Rss: N kB" and "AnonHugePages: N kB" among them, end with
  // "VmFlags: ...", where "hg" marks memory advised for 2 MB pages: the regions.
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  size_t resident_kb = 0, huge_kb = 0;  // of the mapping being read
  while (std::getline(smaps, line)) {
    size_t kb = 0;
    if (std::sscanf(line.c_str(), "Rss: %zu kB", &kb) == 1) resident_kb = kb;
    if (std::sscanf(line.c_str(), "AnonHugePages: %zu kB", &kb) == 1) huge_kb = kb;
    if (line.rfind("VmFlags:", 0) == 0) {
      if ((line + ' ').find(" hg ") != std::string::npos) {
        report.resident_bytes += resident_kb << 10;
        report.huge_bytes += huge_kb << 10;
      }
      resident_kb = huge_kb = 0;
    }
  }
  return report;
}

}  // namespace dspark
