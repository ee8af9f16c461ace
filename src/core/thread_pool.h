// The kernels' parallel loops: a team of the calling thread plus num_threads() - 1 workers
// that wait for work by spinning on a shared counter instead of sleeping in the kernel.
//
// A decoding step runs about 40 parallel loops (four matmuls and attention per layer, the
// LM head) of 10-100 µs each. OpenMP's barriers wake the team with a futex system call at
// every loop's start and end, 3.0-3.7 µs a loop on a 2-vCPU virtual machine against about
// 1 µs for this hand-off (kernels_bench BM_EmptyParallelLoop): 15-20% of a one-token step.
// Workers spin for a while after each loop (kSpinTime in thread_pool.cpp), then sleep, so an
// idle process does not burn its cores. A loop's parts are claimed, not assigned: the
// caller runs whatever part no worker has taken by the time it is free, so a worker that
// is asleep or descheduled (another process on the cores) does not hold the loop up.
//
// How work is split never changes a result: every kernel computes each output whole in one
// thread (batch and thread invariance, DESIGN §7), so static and dynamic schedules and any
// team size give the same bits. A loop called from inside another loop, or while another
// thread's loop holds the team, runs on the calling thread alone.
#pragma once

#include <cstdint>
#include <type_traits>

namespace dspark {

namespace detail {
// body(context, begin, end) over [begin, end) of one part. Never throws (the wrappers below
// are noexcept: a throwing body ends the process instead of unwinding under running workers).
using RangeFn = void (*)(void* context, int64_t begin, int64_t end);
enum class Schedule {
  kStatic,   // one contiguous part of [0, n) per thread, as equal as possible
  kDynamic,  // single indices handed out in order to whichever thread is free
};
void run_parallel(int64_t n, Schedule schedule, RangeFn fn, void* context);
}  // namespace detail

// Calls body(begin, end) on contiguous, disjoint parts of [0, n) that cover it, as many
// parts as the team has threads (a thread runs a second part when another is late), in
// parallel when `parallel` (else body(0, n) on this thread).
template <typename Body>
void parallel_for(int64_t n, bool parallel, Body&& body) {
  if (n <= 0) return;
  if (!parallel || n == 1) {
    body(int64_t{0}, n);
    return;
  }
  using B = std::remove_reference_t<Body>;
  detail::run_parallel(
      n, detail::Schedule::kStatic,
      [](void* context, int64_t begin, int64_t end) noexcept { (*static_cast<B*>(context))(begin, end); }, &body);
}

// Calls body(i) for every i in [0, n), each index on whichever thread of the team takes it
// next (for items of unequal cost), in parallel when `parallel`.
template <typename Body>
void parallel_for_dynamic(int64_t n, bool parallel, Body&& body) {
  if (n <= 0) return;
  if (!parallel || n == 1) {
    for (int64_t i = 0; i < n; ++i) body(i);
    return;
  }
  using B = std::remove_reference_t<Body>;
  detail::run_parallel(
      n, detail::Schedule::kDynamic,
      [](void* context, int64_t begin, int64_t end) noexcept {
        for (int64_t i = begin; i < end; ++i) (*static_cast<B*>(context))(i);
      },
      &body);
}

}  // namespace dspark
