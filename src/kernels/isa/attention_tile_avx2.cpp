// The attention tile with 8-lane vectors (AVX2 + FMA; kernels/isa/attention_tile.h).
#include <immintrin.h>

#include <limits>

#include "kernels/isa/attention_tile.h"
#include "kernels/simd.h"

namespace dspark::kernels {
namespace {

constexpr int64_t kTile = kAttentionTile;
constexpr int64_t kMaxRowsAtOnce = kMaxAttentionRows;
constexpr int64_t kMaxHeadDim = kMaxAttentionHeadDim;
using RowStates = AttentionRowStates;

// 8 elements of a KV row as f32: f32 rows load, bf16 rows widen (exact).
inline __m256 load_kv8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load_kv8(const uint16_t* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

// Lane sum of 8 by a fixed tree (lane i + lane i+4, then +2, +1).
inline float sum_lanes_of_8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Lane sums of eight vectors: out[u] = the sum of v[u]'s lanes, by a fixed tree (pairs,
// then quads, then the two 128-bit halves).
inline __m256 lane_sums_of_8x8(const __m256* v) {
  const __m256 quads01 = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
  const __m256 quads45 = _mm256_hadd_ps(_mm256_hadd_ps(v[4], v[5]), _mm256_hadd_ps(v[6], v[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(quads01, quads45, 0x20), _mm256_permute2f128_ps(quads01, quads45, 0x31));
}

// Lane maxima of eight vectors: out[u] = the largest lane of v[u] (max is exact: the order
// does not matter).
inline __m256 lane_maxima_of_8x8(const __m256* v) {
  __m256 quads[2];  // quads[i] lanes [u, u + 4]: v[4i + u]'s low and high quad maxima
  for (int i = 0; i < 2; ++i) {
    const __m256* w = v + 4 * i;
    const __m256 m01 = _mm256_max_ps(_mm256_unpacklo_ps(w[0], w[1]), _mm256_unpackhi_ps(w[0], w[1]));
    const __m256 m23 = _mm256_max_ps(_mm256_unpacklo_ps(w[2], w[3]), _mm256_unpackhi_ps(w[2], w[3]));
    quads[i] = _mm256_max_ps(_mm256_shuffle_ps(m01, m23, 0x44), _mm256_shuffle_ps(m01, m23, 0xEE));
  }
  return _mm256_max_ps(_mm256_permute2f128_ps(quads[0], quads[1], 0x20),
                       _mm256_permute2f128_ps(quads[0], quads[1], 0x31));
}

// scores_rows with 8-lane vectors: scaled scores of kRows rows that see the same count keys
// into probs[r] (only [0, count) is written), and each row's lane-wise maximum into
// row_max[r]. Keys in whole groups of eight: one FMA chain per key over the chunks, then a
// transposing reduction of 8 partials (8 keys of one row, or 4 of each of two rows sharing
// the keys' loads; the same tree for every partial). The keys after the last whole group:
// two chains per key (even and odd chunks) and a lane sum.
template <typename T, int kChunks, int kRows>
inline void scores_rows_avx2(const float* const* q, const T* const* k_rows, int64_t count, float scale,
                             float (*probs)[kTile], __m256* row_max) {
  static_assert(kRows == 1 || kRows == 2, "one or two rows");
  constexpr int kKeys = 8 / kRows;  // keys per reduction
  const __m256 scale8 = _mm256_set1_ps(scale);
  for (int r = 0; r < kRows; ++r) row_max[r] = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + 8 <= count; j += 8) {
    __m256 sums[kRows];  // lanes [kKeys r, kKeys (r + 1)): keys j + kKeys g + u of row r, group g
    for (int g = 0; g < kRows; ++g) {
      __m256 dot[8];  // [r * kKeys + u]: row r, key j + kKeys g + u
      for (int c = 0; c < kChunks; ++c) {
        __m256 qc[kRows];
        for (int r = 0; r < kRows; ++r) qc[r] = _mm256_loadu_ps(q[r] + 8 * c);
        for (int u = 0; u < kKeys; ++u) {
          const __m256 kc = load_kv8(k_rows[j + kKeys * g + u] + 8 * c);
          for (int r = 0; r < kRows; ++r)
            dot[r * kKeys + u] = c == 0 ? _mm256_mul_ps(qc[r], kc) : _mm256_fmadd_ps(qc[r], kc, dot[r * kKeys + u]);
        }
      }
      sums[g] = lane_sums_of_8x8(dot);
    }
    __m256 row_sums[kRows];  // row r's 8 keys in order
    if constexpr (kRows == 1) {
      row_sums[0] = sums[0];
    } else {  // 128-bit halves: row 0 is both groups' low halves, row 1 their high halves
      row_sums[0] = _mm256_permute2f128_ps(sums[0], sums[1], 0x20);
      row_sums[1] = _mm256_permute2f128_ps(sums[0], sums[1], 0x31);
    }
    for (int r = 0; r < kRows; ++r) {
      const __m256 sc = _mm256_mul_ps(row_sums[r], scale8);
      _mm256_store_ps(probs[r] + j, sc);
      row_max[r] = _mm256_max_ps(row_max[r], sc);
    }
  }
  for (; j < count; ++j)
    for (int r = 0; r < kRows; ++r) {
      const T* k = k_rows[j];
      __m256 dot[2] = {_mm256_mul_ps(_mm256_loadu_ps(q[r]), load_kv8(k)), _mm256_setzero_ps()};
      for (int c = 1; c < kChunks; ++c)
        dot[c & 1] = _mm256_fmadd_ps(_mm256_loadu_ps(q[r] + 8 * c), load_kv8(k + 8 * c), dot[c & 1]);
      probs[r][j] = sum_lanes_of_8(_mm256_add_ps(dot[0], dot[1])) * scale;
      row_max[r] = _mm256_max_ps(row_max[r], _mm256_set1_ps(probs[r][j]));
    }
}

// pv_rows with 8-lane vectors, acc rows of kChunks * 8: one accumulator per chunk and row,
// four chunks at a time (two rows x 4 chunks = 8 accumulators of 16 ymm), the same
// operations for a row whatever kRows.
template <typename T, int kChunks, int kRows>
inline void pv_rows_avx2(const float (*probs)[kTile], const float* corrections, int64_t count, const T* const* v_rows,
                         float* acc) {
  constexpr int kBlock = kChunks < 4 ? kChunks : 4;
  for (int c0 = 0; c0 < kChunks; c0 += kBlock) {
    __m256 av[kRows][kBlock];
    for (int r = 0; r < kRows; ++r) {
      const __m256 corr = _mm256_set1_ps(corrections[r]);
      for (int c = 0; c < kBlock && c0 + c < kChunks; ++c)
        av[r][c] = _mm256_mul_ps(_mm256_loadu_ps(acc + (r * kChunks + c0 + c) * 8), corr);
    }
    for (int64_t j = 0; j < count; ++j) {
      __m256 p[kRows];
      for (int r = 0; r < kRows; ++r) p[r] = _mm256_set1_ps(probs[r][j]);
      for (int c = 0; c < kBlock && c0 + c < kChunks; ++c) {
        const __m256 v = load_kv8(v_rows[j] + 8 * (c0 + c));
        for (int r = 0; r < kRows; ++r) av[r][c] = _mm256_fmadd_ps(p[r], v, av[r][c]);
      }
    }
    for (int r = 0; r < kRows; ++r)
      for (int c = 0; c < kBlock && c0 + c < kChunks; ++c) _mm256_storeu_ps(acc + (r * kChunks + c0 + c) * 8, av[r][c]);
  }
}

// AttendTileFn with 8-lane vectors (AVX2, the build's baseline), for head_dim a multiple of
// 8 = kChunks * 8; acc rows of head_dim. The AVX-512 tile's three passes (scores, every
// row's softmax bookkeeping eight rows to a vector, p·v), rows in pairs where they see the
// same keys.
template <typename T, int kChunks>
void attend_tile_avx2(const float* const* q, int64_t num_rows, const T* const* k_rows, const T* const* v_rows,
                      const int64_t* counts, int64_t head_dim, float scale, RowStates& state, float* acc) {
  (void)head_dim;
  alignas(32) float probs[kMaxRowsAtOnce][kTile];  // [row][key]: scaled scores, then exp(score - new max)
  __m256 row_max[kMaxRowsAtOnce];                  // [row]: lane-wise max of the row's scores
  __m256 row_sum[kMaxRowsAtOnce];                  // [row]: lane-wise sum of the row's p
  alignas(32) int32_t active[kMaxRowsAtOnce] = {};  // -1: the row sees keys in this tile
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t h = 0; h < kMaxRowsAtOnce; ++h) {
    row_max[h] = neg_inf;
    row_sum[h] = _mm256_setzero_ps();
  }
  for (int64_t h = 0; h < num_rows;) {
    const int64_t count = counts[h];
    if (count <= 0) {
      ++h;
    } else if (h + 1 < num_rows && counts[h + 1] == count) {
      scores_rows_avx2<T, kChunks, 2>(q + h, k_rows, count, scale, probs + h, row_max + h);
      active[h] = active[h + 1] = -1;
      h += 2;
    } else {
      scores_rows_avx2<T, kChunks, 1>(q + h, k_rows, count, scale, probs + h, row_max + h);
      active[h++] = -1;
    }
  }
  alignas(32) float corrections[kMaxRowsAtOnce], maxima[kMaxRowsAtOnce];
  for (int g = 0; g < kMaxRowsAtOnce / 8; ++g) {  // eight rows to a vector
    const __m256 old_max = _mm256_load_ps(state.max + 8 * g);
    const __m256 new_max = _mm256_max_ps(old_max, lane_maxima_of_8x8(row_max + 8 * g));
    // First tile: the old maximum is -inf and exp8 gives 0, which clears the (zero) state.
    _mm256_store_ps(corrections + 8 * g, simd::exp8(_mm256_sub_ps(old_max, new_max)));
    _mm256_store_ps(maxima + 8 * g, new_max);
  }
  for (int64_t h = 0; h < num_rows; ++h) {  // p = exp(score - new max), 0 beyond the row's count
    if (!active[h]) continue;
    const int64_t count = counts[h];
    const __m256 m = _mm256_set1_ps(maxima[h]);
    __m256 total = _mm256_setzero_ps();
    for (int64_t j0 = 0; j0 < count; j0 += 8) {
      const __m256 valid = _mm256_castsi256_ps(simd::lanes8(count - j0));
      const __m256 p = _mm256_and_ps(valid, simd::exp8(_mm256_sub_ps(_mm256_load_ps(probs[h] + j0), m)));
      _mm256_store_ps(probs[h] + j0, p);
      total = _mm256_add_ps(total, p);
    }
    row_sum[h] = total;
  }
  for (int g = 0; g < kMaxRowsAtOnce / 8; ++g) {
    const __m256i rows_active = _mm256_load_si256(reinterpret_cast<const __m256i*>(active + 8 * g));
    const __m256 sum = _mm256_fmadd_ps(_mm256_load_ps(state.sum + 8 * g), _mm256_load_ps(corrections + 8 * g),
                                       lane_sums_of_8x8(row_sum + 8 * g));
    _mm256_maskstore_ps(state.sum + 8 * g, rows_active, sum);
    _mm256_maskstore_ps(state.max + 8 * g, rows_active, _mm256_load_ps(maxima + 8 * g));
  }
  for (int64_t h = 0; h < num_rows;) {
    const int64_t count = counts[h];
    if (count <= 0) {
      ++h;
    } else if (h + 1 < num_rows && counts[h + 1] == count) {
      pv_rows_avx2<T, kChunks, 2>(probs + h, corrections + h, count, v_rows, acc + h * kChunks * 8);
      h += 2;
    } else {
      pv_rows_avx2<T, kChunks, 1>(probs + h, corrections + h, count, v_rows, acc + h * kChunks * 8);
      ++h;
    }
  }
}

struct Tile {
  template <typename T, int kChunks>
  static constexpr AttendTileFn<T> run = attend_tile_avx2<T, kChunks>;
};

}  // namespace

AttendTiles attend_tiles_avx2(int64_t head_dim) {
  return attend_tiles_for<Tile, kMaxHeadDim / 8>(head_dim / 8);
}

}  // namespace dspark::kernels
