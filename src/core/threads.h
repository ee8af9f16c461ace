// How many threads the engine computes with: OpenMP's setting (OMP_NUM_THREADS, --threads),
// per calling thread. The kernels' own parallel loops (core/thread_pool.h) size their team
// from it; oneDNN, where a model uses it, runs on OpenMP's threads with the same count.
#pragma once

#include <omp.h>

namespace dspark {

inline int num_threads() { return omp_get_max_threads(); }
inline void set_num_threads(int n) {
  if (n > 0) omp_set_num_threads(n);
}

}  // namespace dspark
