// The attention tile with 8-lane vectors (AVX2 + FMA; kernels/isa/attention_tile.h).
#include <immintrin.h>

#include <algorithm>
#include <limits>
#include <type_traits>

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

// scores_rows with 8-lane vectors: scaled scores of kRows consecutive rows into probs[r]
// (-inf outside the keys [skip, counts[r]) the row sees) and each row's lane-wise maximum
// into row_max[r], for the tile's first kGroups groups of 16 keys. One FMA chain per row
// and 8 keys over the head's elements, keys in the lanes: each K vector serves all kRows
// rows (up to 4), and a row's operations are the same whatever kRows.
template <typename T, int kRows, int kGroups>
inline void scores_rows_avx2(const float* const* q, const KeyTile<T>& keys, int64_t head_dim, const int64_t* counts,
                             float scale, float (*probs)[kTile], __m256* row_max) {
  constexpr int kParts = 2 * kGroups;                    // 8-key parts
  constexpr int kAtOnce = std::min(kParts, 8 / kRows);  // parts per pass: 8 accumulators of 16 ymm
  __m256 dot[kRows][kParts];
  for (int p0 = 0; p0 < kParts; p0 += kAtOnce) {
    __m256 chains[kRows][kAtOnce];
    for (int r = 0; r < kRows; ++r)
      for (int p = 0; p < kAtOnce; ++p) chains[r][p] = _mm256_setzero_ps();
    for (int64_t i = 0; i < head_dim; ++i) {
      __m256 k[kAtOnce];
      for (int p = 0; p < kAtOnce; ++p)
        k[p] = load_kv8(keys.groups[(p0 + p) / 2] + i * keys.stride + 8 * ((p0 + p) % 2));
      for (int r = 0; r < kRows; ++r) {
        const __m256 qi = _mm256_broadcast_ss(q[r] + i);
        for (int p = 0; p < kAtOnce; ++p) chains[r][p] = _mm256_fmadd_ps(qi, k[p], chains[r][p]);
      }
    }
    for (int r = 0; r < kRows; ++r)
      for (int p = 0; p < kAtOnce; ++p) dot[r][p0 + p] = chains[r][p];
  }
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const __m256 scale8 = _mm256_set1_ps(scale);
  for (int r = 0; r < kRows; ++r) {
    row_max[r] = neg_inf;
    for (int p = 0; p < kTile / 8; ++p) {
      const __m256i seen = _mm256_andnot_si256(simd::lanes8(keys.skip - 8 * p), simd::lanes8(counts[r] - 8 * p));
      const __m256 sc = p < kParts ? _mm256_blendv_ps(neg_inf, _mm256_mul_ps(dot[r][p], scale8),
                                                      _mm256_castsi256_ps(seen))
                                   : neg_inf;
      _mm256_store_ps(probs[r] + 8 * p, sc);
      row_max[r] = _mm256_max_ps(row_max[r], sc);
    }
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
void attend_tile_avx2(const float* const* q, int64_t num_rows, const KeyTile<T>& keys, const T* const* v_rows,
                      const int64_t* counts, int64_t head_dim, float scale, RowStates& state, float* acc) {
  alignas(32) float probs[kMaxRowsAtOnce][kTile];  // [row][key]: scaled scores, then exp(score - new max)
  __m256 row_max[kMaxRowsAtOnce];                  // [row]: lane-wise max of the row's scores
  __m256 row_sum[kMaxRowsAtOnce];                  // [row]: lane-wise sum of the row's p
  alignas(32) int32_t active[kMaxRowsAtOnce] = {};  // -1: the row sees keys in this tile
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const int64_t vectors = (num_rows + 7) / 8;  // of row states, eight rows to a vector
  for (int64_t h = 0; h < 8 * vectors; ++h) {
    row_max[h] = neg_inf;
    row_sum[h] = _mm256_setzero_ps();
  }
  for (int64_t h = 0; h < num_rows; ++h) active[h] = counts[h] > keys.skip ? -1 : 0;
  // Scores take groups of up to 4 active rows (each K vector serving them all), p·v of up to
  // 2 (each V vector serving both).
  auto is_active = [&](int64_t h) { return active[h] != 0; };
  for_each_row_group<4>(num_rows, counts, is_active, [&](auto rows, int64_t h, int64_t count) {
    constexpr int kRows = decltype(rows)::value;
    if (count > kAttentionKeyGroup)
      scores_rows_avx2<T, kRows, 2>(q + h, keys, head_dim, counts + h, scale, probs + h, row_max + h);
    else
      scores_rows_avx2<T, kRows, 1>(q + h, keys, head_dim, counts + h, scale, probs + h, row_max + h);
  });
  alignas(32) float corrections[kMaxRowsAtOnce], maxima[kMaxRowsAtOnce];
  for (int64_t g = 0; g < vectors; ++g) {
    const __m256 old_max = _mm256_load_ps(state.max + 8 * g);
    const __m256 new_max = _mm256_max_ps(old_max, lane_maxima_of_8x8(row_max + 8 * g));
    // First tile: the old maximum is -inf and exp8 gives 0, which clears the (zero) state.
    _mm256_store_ps(corrections + 8 * g, simd::exp8(_mm256_sub_ps(old_max, new_max)));
    _mm256_store_ps(maxima + 8 * g, new_max);
  }
  for (int64_t h = 0; h < num_rows; ++h) {  // p = exp(score - new max), 0 for the keys the row does not see
    if (!active[h]) continue;
    const int64_t count = counts[h];
    const __m256 m = _mm256_set1_ps(maxima[h]);
    __m256 total = _mm256_setzero_ps();
    for (int64_t j0 = 0; j0 < kTile; j0 += 8) {
      const __m256 seen =
          _mm256_castsi256_ps(_mm256_andnot_si256(simd::lanes8(keys.skip - j0), simd::lanes8(count - j0)));
      const __m256 p = _mm256_and_ps(seen, simd::exp8(_mm256_sub_ps(_mm256_load_ps(probs[h] + j0), m)));
      _mm256_store_ps(probs[h] + j0, p);
      total = _mm256_add_ps(total, p);
    }
    row_sum[h] = total;
  }
  for (int64_t g = 0; g < vectors; ++g) {
    const __m256i rows_active = _mm256_load_si256(reinterpret_cast<const __m256i*>(active + 8 * g));
    const __m256 sum = _mm256_fmadd_ps(_mm256_load_ps(state.sum + 8 * g), _mm256_load_ps(corrections + 8 * g),
                                       lane_sums_of_8x8(row_sum + 8 * g));
    _mm256_maskstore_ps(state.sum + 8 * g, rows_active, sum);
    _mm256_maskstore_ps(state.max + 8 * g, rows_active, _mm256_load_ps(maxima + 8 * g));
  }
  // p·v: a key a row does not see has p = 0, which leaves its accumulators as they are.
  for_each_row_group<2>(num_rows, counts, is_active, [&](auto rows, int64_t h, int64_t count) {
    pv_rows_avx2<T, kChunks, decltype(rows)::value>(probs + h, corrections + h, count, v_rows, acc + h * kChunks * 8);
  });
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
