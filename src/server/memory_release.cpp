#include "server/memory_release.h"

#include <malloc.h>

#include <atomic>
#include <chrono>
#include <mutex>

namespace dspark {
namespace {

constexpr int kMmapThreshold = 1 << 20;
constexpr int kTrimThreshold = 8 << 20;
constexpr int kMaxArenas = 8;
constexpr uint64_t kTrimAfterBytes = 1u << 20;
constexpr int64_t kTrimIntervalMs = 1000;

}  // namespace

void tune_allocator_for_serving() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Fixing either threshold also turns off glibc's dynamic raising of both.
    ::mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
    ::mallopt(M_TRIM_THRESHOLD, kTrimThreshold);
    ::mallopt(M_ARENA_MAX, kMaxArenas);
  });
}

void release_memory_after(uint64_t request_bytes) {
  static std::atomic<int64_t> last_trim_ms{0};
  if (request_bytes < kTrimAfterBytes) return;
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now().time_since_epoch())
                             .count();
  int64_t last = last_trim_ms.load();
  if (now_ms - last < kTrimIntervalMs || !last_trim_ms.compare_exchange_strong(last, now_ms)) return;
  ::malloc_trim(0);
}

}  // namespace dspark
