#include "core/thread_pool.h"

#include <immintrin.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "core/threads.h"

namespace dspark::detail {
namespace {

// How long a worker keeps spinning for the next loop before it sleeps. Between the loops of
// one step the master thread works alone for microseconds (norms, RoPE, sampling); between
// steps of a busy engine, for tens. Sleeping costs a futex wake on the next loop.
constexpr auto kSpinTime = std::chrono::microseconds(300);

// Threads this process may run on at once (its CPU affinity, as in a container's cpuset).
int usable_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

// Set while a thread runs a part of a loop: a loop inside it runs on that thread alone.
thread_local bool tls_in_loop = false;

class Team {
 public:
  // Never destroyed: a kernel may run from a static destructor, and sleeping workers end
  // with the process.
  static Team& instance() {
    static Team* team = new Team;
    return *team;
  }

  // Runs the loop with `threads` threads (this one included); false when the team is taken
  // by another thread's loop, or this thread is already inside a loop (or for a loop of
  // 2^32 - 1 items or more).
  bool run(int64_t n, Schedule schedule, RangeFn fn, void* context, int threads) {
    if (tls_in_loop || n >= static_cast<int64_t>(kClosed)) return false;  // (parts are counted in 32 bits)
    std::unique_lock<std::mutex> taken(busy_, std::try_to_lock);
    if (!taken.owns_lock()) return false;
    if (static_cast<int>(workers_.size()) != threads - 1) resize(threads - 1);
    const uint64_t generation = generation_.load(std::memory_order_relaxed) + 1;
    // Closed first (no part left to claim), so that a worker still looking at the previous
    // loop cannot claim a part while the fields below change: one that reads the new part
    // count (acquire) sees the closed word in its claim.
    claim_.store(generation << 32 | kClosed, std::memory_order_seq_cst);
    n_ = n;
    schedule_ = schedule;
    fn_ = fn;
    context_ = context;
    const int64_t parts = schedule == Schedule::kDynamic ? n : std::min<int64_t>(n, threads);
    parts_done_.store(0, std::memory_order_relaxed);
    parts_.store(parts, std::memory_order_release);
    claim_.store(generation << 32, std::memory_order_release);  // opens the loop: part 0 next
    generation_.store(generation, std::memory_order_seq_cst);
    wake_sleepers();
    tls_in_loop = true;
    run_parts(generation);
    tls_in_loop = false;
    // Only parts a worker has claimed are left: wait for those.
    const auto start = std::chrono::steady_clock::now();
    for (int spins = 0; parts_done_.load(std::memory_order_acquire) != parts; ++spins) {
      _mm_pause();
      // A worker that was descheduled (more threads than cores) needs this core back.
      if ((spins & 63) == 63 && (oversubscribed_ || std::chrono::steady_clock::now() - start > kSpinTime))
        std::this_thread::yield();
    }
    return true;
  }

 private:
  Team() = default;

  // Claims parts of loop `generation` one at a time and runs them, until none is left or a
  // newer loop has replaced it. The caller runs this too, so a worker that has not woken
  // up (asleep, or descheduled on a busy machine) delays nothing: the caller takes its part.
  // Parts are the same whoever runs them, so results are too.
  void run_parts(uint64_t generation) {
    for (;;) {
      uint64_t claim = claim_.load(std::memory_order_acquire);
      const int64_t part = static_cast<int64_t>(claim & 0xffffffffu);
      if ((claim >> 32) != (generation & 0xffffffffu) || part >= parts_.load(std::memory_order_acquire)) return;
      if (!claim_.compare_exchange_weak(claim, claim + 1, std::memory_order_acq_rel)) continue;
      // The loop stays current until its every part is done, this one included.
      if (schedule_ == Schedule::kDynamic) {
        fn_(context_, part, part + 1);
      } else {
        const int64_t parts = parts_.load(std::memory_order_relaxed);
        const int64_t base = n_ / parts, extra = n_ % parts;
        const int64_t begin = part * base + std::min<int64_t>(part, extra);
        fn_(context_, begin, begin + base + (part < extra ? 1 : 0));
      }
      parts_done_.fetch_add(1, std::memory_order_release);
    }
  }

  void wake_sleepers() {
    // seq_cst against the worker's increment before it checks the generation under the
    // mutex: either it sees the new generation, or this sees it asleep and wakes it.
    if (sleepers_.load(std::memory_order_seq_cst) == 0) return;
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    wake_.notify_all();
  }

  void worker_main(uint64_t seen) {
    tls_in_loop = true;
    for (;;) {
      wait_for_generation_after(seen);
      if (stop_.load(std::memory_order_acquire)) return;
      // The newest loop: an older one has ended (its caller waited for all its parts).
      seen = generation_.load(std::memory_order_acquire);
      run_parts(seen);
    }
  }

  void wait_for_generation_after(uint64_t seen) {
    if (!oversubscribed_) {
      const auto start = std::chrono::steady_clock::now();
      for (int spins = 1;; ++spins) {
        if (generation_.load(std::memory_order_acquire) != seen) return;
        _mm_pause();
        if ((spins & 63) == 0 && std::chrono::steady_clock::now() - start > kSpinTime) break;
      }
    }
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    {
      std::unique_lock<std::mutex> lock(sleep_mutex_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_seq_cst) != seen; });
    }
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }

  // Called with busy_ held, so no loop is running.
  void resize(int workers) {
    if (!workers_.empty()) {
      stop_.store(true, std::memory_order_release);
      generation_.fetch_add(1, std::memory_order_seq_cst);
      {
        std::lock_guard<std::mutex> lock(sleep_mutex_);
        wake_.notify_all();
      }
      for (auto& w : workers_) w.join();
      workers_.clear();
      stop_.store(false, std::memory_order_relaxed);
    }
    oversubscribed_ = workers + 1 > usable_cpus();
    const uint64_t seen = generation_.load(std::memory_order_relaxed);
    for (int i = 0; i < workers; ++i) workers_.emplace_back([this, seen] { worker_main(seen); });
  }

  std::mutex busy_;  // held by the thread whose loop the team runs
  std::vector<std::thread> workers_;
  bool oversubscribed_ = false;  // more threads than usable CPUs: yield instead of spinning

  // The current loop, written by its caller before claim_ publishes it; read by a thread
  // only after it has claimed one of the loop's parts.
  int64_t n_ = 0;
  Schedule schedule_ = Schedule::kStatic;
  RangeFn fn_ = nullptr;
  void* context_ = nullptr;
  std::atomic<int64_t> parts_{0};  // static: one range per thread; dynamic: one per index

  alignas(64) std::atomic<uint64_t> generation_{0};  // one per loop
  alignas(64) std::atomic<uint64_t> claim_{0};       // [generation's low 32 bits | next part]
  static constexpr uint64_t kClosed = 0xffffffffu;   // "next part" of a loop being set up
  alignas(64) std::atomic<int64_t> parts_done_{0};   // parts of this loop finished
  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
};

}  // namespace

void run_parallel(int64_t n, Schedule schedule, RangeFn fn, void* context) {
  const int threads = num_threads();
  if (threads > 1 && Team::instance().run(n, schedule, fn, context, threads)) return;
  fn(context, 0, n);
}

}  // namespace dspark::detail
