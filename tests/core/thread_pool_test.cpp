#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/threads.h"

namespace dspark {
namespace {

// Restores the calling thread's thread count at the end of a test.
class ThreadCount {
 public:
  explicit ThreadCount(int n) : saved_(num_threads()) { set_num_threads(n); }
  ~ThreadCount() { set_num_threads(saved_); }

 private:
  int saved_;
};

// A loop body for `parties` parts that holds each part until every part has started (or 10
// s have passed): no thread can run two parts, so each part shows which thread took it.
class Rendezvous {
 public:
  explicit Rendezvous(int parties) : parties_(parties) {}
  void arrive_and_wait() {
    entered_.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (entered_.load() < parties_ && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  }

 private:
  int parties_;
  std::atomic<int> entered_{0};
};

// Every index of [0, n) is visited exactly once, for any team size and n.
TEST(ParallelFor, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadCount count(threads);
    for (int64_t n : {1, 2, 3, 7, 64, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      int parts = 0;
      std::mutex m;
      parallel_for(n, true, [&](int64_t begin, int64_t end) {
        ASSERT_LT(begin, end);
        for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
        std::lock_guard<std::mutex> lock(m);
        ++parts;
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "n " << n << " i " << i;
      EXPECT_EQ(parts, std::min<int64_t>(n, threads)) << "n " << n << " threads " << threads;
    }
  }
}

// Static parts are contiguous and as equal as possible, in thread order.
TEST(ParallelFor, StaticPartsAreBalanced) {
  ThreadCount count(3);
  std::vector<std::pair<int64_t, int64_t>> parts;
  std::mutex m;
  parallel_for(10, true, [&](int64_t begin, int64_t end) {
    std::lock_guard<std::mutex> lock(m);
    parts.emplace_back(begin, end);
  });
  std::sort(parts.begin(), parts.end());
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0], std::make_pair(int64_t{0}, int64_t{4}));
  EXPECT_EQ(parts[1], std::make_pair(int64_t{4}, int64_t{7}));
  EXPECT_EQ(parts[2], std::make_pair(int64_t{7}, int64_t{10}));
}

// The team's threads run the parts: while the caller is busy with one part, a worker takes
// the other.
TEST(ParallelFor, RunsOnSeveralThreads) {
  ThreadCount count(2);
  for (int rep = 0; rep < 5; ++rep) {
    std::set<std::thread::id> ids;
    std::mutex m;
    Rendezvous both(2);
    parallel_for(2, true, [&](int64_t, int64_t) {
      {
        std::lock_guard<std::mutex> lock(m);
        ids.insert(std::this_thread::get_id());
      }
      both.arrive_and_wait();
    });
    EXPECT_EQ(ids.size(), 2u);
  }
}

// Parts are claimed, not assigned: a caller that is free before a worker has woken up runs
// the worker's part itself instead of waiting for it. The worker sleeps after 5 ms idle, so
// its first claim needs a futex wake-up, while the caller claims the second part right after
// its empty first one; over 20 tries that must happen at least once (with parts assigned
// per thread, never).
TEST(ParallelFor, CallerRunsPartsNoWorkerTook) {
  ThreadCount count(2);
  const auto caller = std::this_thread::get_id();
  int loops_on_caller_alone = 0;
  for (int rep = 0; rep < 20 && loops_on_caller_alone == 0; ++rep) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the worker sleeps by now
    std::atomic<int> by_caller{0};
    parallel_for(2, true, [&](int64_t, int64_t) {
      if (std::this_thread::get_id() == caller) by_caller.fetch_add(1);
    });
    if (by_caller.load() == 2) ++loops_on_caller_alone;
  }
  EXPECT_GT(loops_on_caller_alone, 0);
}

// Many short loops back to back, static and dynamic in turn: a worker that is still on
// one loop when the caller has finished it alone and set up the next never runs a part of
// the wrong loop, twice, or after the caller has returned (each loop's hits are checked
// once it returns, and its body dies with it).
TEST(ParallelFor, BackToBackLoopsEachRunEveryPartOnce) {
  ThreadCount count(2);
  for (int rep = 0; rep < 20000; ++rep) {
    const int64_t n = 1 + rep % 5;
    std::array<std::atomic<int>, 5> hits{};
    if (rep % 2 == 0) {
      parallel_for(n, true, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
      });
    } else {
      parallel_for_dynamic(n, true, [&](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); });
    }
    for (int64_t i = 0; i < 5; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), i < n ? 1 : 0) << "loop " << rep;
  }
}

TEST(ParallelFor, NotParallelRunsOnTheCaller) {
  ThreadCount count(4);
  const auto caller = std::this_thread::get_id();
  int calls = 0;
  parallel_for(100, false, [&](int64_t begin, int64_t end) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 100);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
}

// A loop inside a loop's body runs whole on the thread that calls it.
TEST(ParallelFor, NestedLoopRunsInline) {
  ThreadCount count(2);
  std::atomic<int64_t> total{0};
  parallel_for(4, true, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const auto outer = std::this_thread::get_id();
      parallel_for(8, true, [&](int64_t b, int64_t e) {
        EXPECT_EQ(std::this_thread::get_id(), outer);
        total.fetch_add(e - b);
      });
    }
  });
  EXPECT_EQ(total.load(), 32);
}

TEST(ParallelForDynamic, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 4}) {
    ThreadCount count(threads);
    for (int64_t n : {1, 2, 5, 333}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      parallel_for_dynamic(n, true, [&](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1);
    }
  }
}

// Loops from several threads at once (two engines in one process): each completes, the
// one that finds the team busy on its own thread.
TEST(ParallelFor, ConcurrentCallersEachComplete) {
  std::vector<std::thread> callers;
  std::vector<int64_t> sums(4, 0);
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&, c] {
      set_num_threads(2);
      for (int rep = 0; rep < 500; ++rep) {
        std::atomic<int64_t> sum{0};
        parallel_for(97, true, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) sum.fetch_add(i);
        });
        sums[static_cast<size_t>(c)] += sum.load();
      }
    });
  for (auto& t : callers) t.join();
  for (int64_t s : sums) EXPECT_EQ(s, 500 * (96 * 97 / 2));
}

// Workers that went to sleep after a pause wake for the next loop; a changed thread count
// takes effect at the next loop.
TEST(ParallelFor, WakesAfterIdleAndFollowsThreadCount) {
  for (int threads : {2, 3, 2, 1, 2}) {
    ThreadCount count(threads);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // workers sleep by now
    std::set<std::thread::id> ids;
    std::mutex m;
    std::atomic<int> parts{0};
    Rendezvous all(threads);
    parallel_for(threads, true, [&](int64_t begin, int64_t end) {
      EXPECT_EQ(end - begin, 1);
      parts.fetch_add(1);
      {
        std::lock_guard<std::mutex> lock(m);
        ids.insert(std::this_thread::get_id());
      }
      all.arrive_and_wait();
    });
    EXPECT_EQ(parts.load(), threads);
    EXPECT_EQ(static_cast<int>(ids.size()), threads);
  }
}

}  // namespace
}  // namespace dspark
