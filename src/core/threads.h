// The engine's one thread pool is OpenMP's (oneDNN in Debian uses the same runtime, so
// matmuls and hand-written kernels share hot threads instead of fighting over cores).
#pragma once

#include <omp.h>

namespace dspark {

inline int num_threads() { return omp_get_max_threads(); }
inline void set_num_threads(int n) {
  if (n > 0) omp_set_num_threads(n);
}

}  // namespace dspark
