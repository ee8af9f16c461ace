// Asking for a later chunk's weights while the current one computes, for the bf16 / f32
// matmul kernels (internal to kernels/isa/).
//
// Those kernels stream their weights from memory once per product, so each tile asks for
// the lines of a chunk some chunks ahead (_mm_prefetch) to overlap the reads with its
// arithmetic. The asks are spread over the chunk's k-pairs, a few lines per pair: asked all
// at once when a chunk starts (32-64 lines of bf16 or f32), they outnumber the core's line
// fill buffers, and (as the timings read) the asks that find none hold up the instructions
// behind them: the arithmetic waited for memory instead of overlapping it. Measured on an
// Intel Xeon, 3072 x 512 weights streamed from L3: fma512 9 rows 1.36x faster, 5 rows 1.40x,
// one row 1.07x; dpbf16 9 rows 1.28x. The int8 kernels still ask for a chunk record (16
// lines) at once: spread over its steps of k, they were no faster streamed (and 15-25% slower
// at 8-9 rows in cache unless the step loop was unrolled).
#pragma once

#include <xmmintrin.h>

#include <cstdint>

namespace dspark::kernels {

// Asks for step `step` of kSteps of the kBytes at `ahead`, each step the same share of the
// lines in order: a fixed count the compiler unrolls, no loop beside the FMAs (measured on an
// Intel Xeon: the fma512 9-token step 2.7% faster than with bounds computed per step).
// static: each ISA's translation unit compiles its own copy.
template <int64_t kBytes, int64_t kSteps>
static inline void prefetch_step(const void* ahead, int64_t step) {
  constexpr int64_t kLines = (kBytes + 63) / 64;
  static_assert(kLines % kSteps == 0, "every tile's weights of a chunk split evenly over its steps");
  constexpr int64_t kPerStep = kLines / kSteps;
  const char* p = static_cast<const char*>(ahead);
  #pragma GCC unroll 16
  for (int64_t i = 0; i < kPerStep; ++i) _mm_prefetch(p + (step * kPerStep + i) * 64, _MM_HINT_T0);
}

}  // namespace dspark::kernels
