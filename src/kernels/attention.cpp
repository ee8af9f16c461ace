#include "kernels/attention.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/thread_pool.h"
#include "kernels/simd.h"

namespace dspark {
namespace {

// Keys per online-softmax step. Tiles start at absolute positions 0, kTile, 2*kTile, ...
// so the order of operations for a query row is fixed by its num_keys alone.
constexpr int64_t kTile = 32;
constexpr int64_t kMaxHeadDim = 256;
constexpr int64_t kMaxRowsAtOnce = 16;  // query rows (token, head) of one KV head processed together
// Below this many multiply-adds (q·k and p·v) a call stays on the calling thread.
constexpr int64_t kParallelMinMacs = 64 * 1024;

const char* kv_dtype_error = "KvLayerView: dtype must be f32 or bf16";

void check_view(const KvLayerView& kv) {
  DSPARK_CHECK(kv.dtype == DType::kF32 || kv.dtype == DType::kBF16, "{}, got {}", kv_dtype_error,
               dtype_name(kv.dtype));
  DSPARK_CHECK(kv.k && kv.v, "KvLayerView: null K or V pool");
  DSPARK_CHECK(kv.num_blocks > 0 && kv.block_size > 0 && kv.num_kv_heads > 0 && kv.head_dim > 0,
               "KvLayerView: bad shape blocks={} block_size={} kv_heads={} head_dim={}", kv.num_blocks,
               kv.block_size, kv.num_kv_heads, kv.head_dim);
}

// First position token t sees: 0, or the start of its sliding window.
int64_t first_key(const PagedAttentionArgs& args, int64_t t) {
  return args.window > 0 ? std::max<int64_t>(0, args.num_keys[t] - args.window) : 0;
}

// Row of KV head `head` at `slot`, f32 pool or bf16 pool.
template <typename T>
const T* kv_row(const void* pool, int64_t slot, int64_t head, const KvLayerView& kv) {
  return static_cast<const T*>(pool) + (slot * kv.num_kv_heads + head) * kv.head_dim;
}

// Running state of the online softmax of a unit's query rows, one lane per row (the tiles
// update all rows' states a vector at a time).
struct RowStates {
  alignas(64) float max[kMaxRowsAtOnce];
  alignas(64) float sum[kMaxRowsAtOnce];
};

// One tile of keys for `num_rows` query rows (heads, of one or more tokens) that share a
// KV head. q: [num_rows] rows of head_dim; k_rows/v_rows: the tile's rows of T (f32 or bf16
// bits); counts: [num_rows] keys of the tile each row sees (a row with none is left as it
// is); acc: [num_rows, head_dim rounded up to the vector width]. A row's operations depend
// on its own count only.
template <typename T>
using AttendTileFn = void (*)(const float* const*, int64_t, const T* const*, const T* const*, const int64_t*,
                              int64_t, float, RowStates&, float*);

DSPARK_AVX512_BEGIN

// Lane reductions of 16 vectors: result lane j = op over the lanes of v[j]. Every v[j] is
// reduced by the same tree (lane i with lane i+8, then +4, +2, +1), whatever its position j.
template <typename Op>
inline __m512 reduce_lanes_of_16(const __m512* v, Op op) {
  __m512 w[8], x[4], y[2];
  for (int j = 0; j < 8; ++j)  // 256-bit halves: w[j] = [v[2j] lo op hi | v[2j+1] lo op hi]
    w[j] = op(_mm512_shuffle_f32x4(v[2 * j], v[2 * j + 1], 0x44), _mm512_shuffle_f32x4(v[2 * j], v[2 * j + 1], 0xEE));
  for (int j = 0; j < 4; ++j)  // 128-bit lanes: x[j] lane L = 4 partials of v[4j + L]
    x[j] = op(_mm512_shuffle_f32x4(w[2 * j], w[2 * j + 1], 0x88), _mm512_shuffle_f32x4(w[2 * j], w[2 * j + 1], 0xDD));
  for (int j = 0; j < 2; ++j)  // pairs within lanes
    y[j] = op(_mm512_shuffle_ps(x[2 * j], x[2 * j + 1], 0x44), _mm512_shuffle_ps(x[2 * j], x[2 * j + 1], 0xEE));
  const __m512 z = op(_mm512_shuffle_ps(y[0], y[1], 0x88), _mm512_shuffle_ps(y[0], y[1], 0xDD));
  // z lane 4L + i holds v[4i + L]; put v[j] in lane j.
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(order, z);
}
struct AddLanes {  // (not a lambda: GCC does not give lambdas the region's target ISA)
  __m512 operator()(__m512 a, __m512 b) const { return _mm512_add_ps(a, b); }
};
struct MaxLanes {
  __m512 operator()(__m512 a, __m512 b) const { return _mm512_max_ps(a, b); }
};
inline __m512 sum_lanes_of_16(const __m512* v) { return reduce_lanes_of_16(v, AddLanes{}); }
inline __m512 max_lanes_of_16(const __m512* v) { return reduce_lanes_of_16(v, MaxLanes{}); }

// 16 (masked) elements of a KV row as f32: f32 rows load, bf16 rows widen in registers.
inline __m512 load_kv(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
inline __m512 load_kv(const uint16_t* p, __mmask16 m) { return simd::load_bf16(p, m); }

// p·v of kRows consecutive rows that see the same count keys of the tile, sharing each V
// load: acc[r] = acc[r] * corrections[r] + Σ_j probs[r][j] v_j. Per row two accumulator sets
// (keys at even / odd offsets) halve the FMA chain and are added in a fixed order at the
// end, the same operations for a row whatever kRows.
constexpr int kMaxChunksForPairs = 4;  // 2 rows x 2 sets x 4 chunks = 16 accumulators (of 32 zmm)
template <typename T, int kChunks, int kRows>
inline void pv_rows(const float (*probs)[kTile], const float* corrections, int64_t count, const T* const* v_rows,
                    const __mmask16* chunk_mask, float* acc) {
  __m512 even[kRows][kChunks], odd[kRows][kChunks];
  for (int r = 0; r < kRows; ++r) {
    const __m512 corr = _mm512_set1_ps(corrections[r]);
    for (int c = 0; c < kChunks; ++c) {
      even[r][c] = _mm512_mul_ps(_mm512_load_ps(acc + (r * kChunks + c) * 16), corr);
      odd[r][c] = _mm512_setzero_ps();
    }
  }
  int64_t j = 0;
  for (; j + 1 < count; j += 2) {
    __m512 pe[kRows], po[kRows];
    for (int r = 0; r < kRows; ++r) {
      pe[r] = _mm512_set1_ps(probs[r][j]);
      po[r] = _mm512_set1_ps(probs[r][j + 1]);
    }
    for (int c = 0; c < kChunks; ++c) {
      const __m512 ve = load_kv(v_rows[j] + 16 * c, chunk_mask[c]);
      const __m512 vo = load_kv(v_rows[j + 1] + 16 * c, chunk_mask[c]);
      for (int r = 0; r < kRows; ++r) {
        even[r][c] = _mm512_fmadd_ps(pe[r], ve, even[r][c]);
        odd[r][c] = _mm512_fmadd_ps(po[r], vo, odd[r][c]);
      }
    }
  }
  if (j < count) {
    for (int c = 0; c < kChunks; ++c) {
      const __m512 ve = load_kv(v_rows[j] + 16 * c, chunk_mask[c]);
      for (int r = 0; r < kRows; ++r) even[r][c] = _mm512_fmadd_ps(_mm512_set1_ps(probs[r][j]), ve, even[r][c]);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kChunks; ++c) _mm512_store_ps(acc + (r * kChunks + c) * 16, _mm512_add_ps(even[r][c], odd[r][c]));
}

// Scaled scores q·k of kRows consecutive rows that see the same count keys of the tile
// (-inf beyond it) into probs[r], and each row's lane-wise maximum over its parts into
// row_max[r]. Per key a 16-lane partial dot product (one FMA chain over the chunks), then a
// transposing reduction of 16 partials at once (cheaper than 16 horizontal sums): 16 keys
// of one row, or 8 keys of each of two rows sharing the keys' loads. Every partial is
// reduced by the same tree wherever it sits, so a row's scores do not depend on kRows.
template <typename T, int kChunks, int kRows>
inline void scores_rows(const float* const* q, const T* const* k_rows, int64_t count, const __mmask16* chunk_mask,
                        float scale, float (*probs)[kTile], __m512* row_max) {
  static_assert(kRows == 1 || kRows == 2, "one or two rows");
  constexpr int kKeys = 16 / kRows;  // keys per reduction
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 qv[kRows][kChunks];
  for (int r = 0; r < kRows; ++r) {
    row_max[r] = neg_inf;
    for (int c = 0; c < kChunks; ++c) qv[r][c] = _mm512_maskz_loadu_ps(chunk_mask[c], q[r] + 16 * c);
  }
  for (int64_t base = 0; base < kTile; base += 16) {
    if (base >= count) {
      for (int r = 0; r < kRows; ++r) _mm512_store_ps(probs[r] + base, neg_inf);
      continue;
    }
    __m512 sums[kRows];  // lanes [kKeys r, kKeys (r + 1)): keys base + kKeys g + u of row r, group g
    for (int g = 0; g < kRows; ++g) {
      __m512 partial[16];  // [r * kKeys + u]: row r, key base + kKeys g + u
      for (int u = 0; u < kKeys; ++u) {
        const int64_t j = base + kKeys * g + u;
        if (j >= count) {
          for (int r = 0; r < kRows; ++r) partial[r * kKeys + u] = _mm512_setzero_ps();
          continue;
        }
        const T* k = k_rows[j];
        __m512 kc = load_kv(k, chunk_mask[0]);
        __m512 dot[kRows];
        for (int r = 0; r < kRows; ++r) dot[r] = _mm512_mul_ps(qv[r][0], kc);
        for (int c = 1; c < kChunks; ++c) {
          kc = load_kv(k + 16 * c, chunk_mask[c]);
          for (int r = 0; r < kRows; ++r) dot[r] = _mm512_fmadd_ps(qv[r][c], kc, dot[r]);
        }
        for (int r = 0; r < kRows; ++r) partial[r * kKeys + u] = dot[r];
      }
      sums[g] = sum_lanes_of_16(partial);
    }
    __m512 row_sums[kRows];  // row r's 16 keys in order
    if constexpr (kRows == 1) {
      row_sums[0] = sums[0];
    } else {  // 256-bit halves: row 0 is both groups' low halves, row 1 their high halves
      row_sums[0] = _mm512_shuffle_f32x4(sums[0], sums[1], 0x44);
      row_sums[1] = _mm512_shuffle_f32x4(sums[0], sums[1], 0xEE);
    }
    for (int r = 0; r < kRows; ++r) {
      const __m512 sc =
          _mm512_mask_mov_ps(neg_inf, simd::lanes(count - base), _mm512_mul_ps(row_sums[r], _mm512_set1_ps(scale)));
      _mm512_store_ps(probs[r] + base, sc);
      row_max[r] = _mm512_max_ps(row_max[r], sc);
    }
  }
}

// AttendTileFn with 16-lane vectors; acc rows of kChunks * 16. Three passes over the rows:
// scores, then the softmax bookkeeping of all rows at once (one lane per row: a row's own
// maximum, correction and sum would each be a chain of dependent reductions and a scalar
// exp, which cost as much as its scores), then p·v.
template <typename T, int kChunks>
void attend_tile(const float* const* q, int64_t num_rows, const T* const* k_rows,
                 const T* const* v_rows, const int64_t* counts, int64_t head_dim, float scale,
                 RowStates& state, float* acc) {
  static_assert(kMaxRowsAtOnce == 16, "one lane per row");
  __mmask16 chunk_mask[kChunks];
  for (int c = 0; c < kChunks; ++c) chunk_mask[c] = simd::lanes(head_dim - 16 * c);
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  alignas(64) float probs[kMaxRowsAtOnce][kTile];  // [row][key]: scaled scores, then exp(score - new max)
  __m512 row_max[kMaxRowsAtOnce];  // [row]: lane-wise max of the row's 16-key parts of scores
  __m512 row_sum[kMaxRowsAtOnce];  // [row]: lane-wise sum of the row's 16-key parts of p
  __mmask16 active = 0;            // rows that see keys in this tile
  for (int64_t h = num_rows; h < kMaxRowsAtOnce; ++h) row_max[h] = neg_inf;
  // Scores, two rows at a time where they see the same keys (as p·v below).
  for (int64_t h = 0; h < num_rows;) {
    const int64_t count = counts[h];
    if (count <= 0) {
      row_max[h++] = neg_inf;
    } else if (kChunks <= kMaxChunksForPairs && h + 1 < num_rows && counts[h + 1] == count) {
      scores_rows<T, kChunks, 2>(q + h, k_rows, count, chunk_mask, scale, probs + h, row_max + h);
      active |= static_cast<__mmask16>(3u << h);
      h += 2;
    } else {
      scores_rows<T, kChunks, 1>(q + h, k_rows, count, chunk_mask, scale, probs + h, row_max + h);
      active |= static_cast<__mmask16>(1u << h);
      ++h;
    }
  }
  // Every row's new maximum and correction at once. The first tile's old maximum is -inf:
  // its correction is (nearly) 0 and multiplies a zero state.
  const __m512 old_max = _mm512_load_ps(state.max);
  const __m512 new_max = _mm512_max_ps(old_max, max_lanes_of_16(row_max));
  alignas(64) float corrections[kMaxRowsAtOnce], maxima[kMaxRowsAtOnce];
  _mm512_store_ps(corrections, simd::exp(_mm512_sub_ps(old_max, new_max)));
  _mm512_store_ps(maxima, new_max);
  // p = exp(score - new max), 0 beyond the row's count.
  for (int64_t h = 0; h < num_rows; ++h) {
    if (!(active >> h & 1u)) {
      row_sum[h] = _mm512_setzero_ps();
      continue;
    }
    const int64_t count = counts[h];
    const __m512 m = _mm512_set1_ps(maxima[h]);
    __m512 total = _mm512_setzero_ps();
    for (int64_t part = 0; part < kTile / 16; ++part) {
      float* ps = probs[h] + 16 * part;
      const __m512 p = _mm512_maskz_mov_ps(simd::lanes(count - 16 * part), simd::exp(_mm512_sub_ps(_mm512_load_ps(ps), m)));
      _mm512_store_ps(ps, p);
      total = part == 0 ? p : _mm512_add_ps(total, p);
    }
    row_sum[h] = total;
  }
  for (int64_t h = num_rows; h < kMaxRowsAtOnce; ++h) row_sum[h] = _mm512_setzero_ps();
  const __m512 sum = _mm512_fmadd_ps(_mm512_load_ps(state.sum), _mm512_load_ps(corrections), sum_lanes_of_16(row_sum));
  _mm512_mask_store_ps(state.sum, active, sum);
  _mm512_mask_store_ps(state.max, active, new_max);
  // Then p·v: two rows at a time where they see the same keys (every full tile), sharing
  // each V load, while the accumulators fit in registers.
  for (int64_t h = 0; h < num_rows;) {
    const int64_t count = counts[h];
    if (count <= 0) {
      ++h;
    } else if (kChunks <= kMaxChunksForPairs && h + 1 < num_rows && counts[h + 1] == count) {
      pv_rows<T, kChunks, 2>(probs + h, corrections + h, count, v_rows, chunk_mask, acc + h * kChunks * 16);
      h += 2;
    } else {
      pv_rows<T, kChunks, 1>(probs + h, corrections + h, count, v_rows, chunk_mask, acc + h * kChunks * 16);
      ++h;
    }
  }
}

template <typename T, int... kChunks>
AttendTileFn<T> attend_tile_table(int64_t chunks, std::integer_sequence<int, kChunks...>) {
  static constexpr AttendTileFn<T> table[] = {attend_tile<T, kChunks + 1>...};
  return table[chunks - 1];
}

template <typename T>
AttendTileFn<T> attend_tile_fn_avx512(int64_t head_dim) {
  return attend_tile_table<T>((head_dim + 15) / 16, std::make_integer_sequence<int, kMaxHeadDim / 16>{});
}
DSPARK_AVX512_END

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

template <typename T, int... kChunks>
AttendTileFn<T> attend_tile_table_avx2(int64_t chunks, std::integer_sequence<int, kChunks...>) {
  static constexpr AttendTileFn<T> table[] = {attend_tile_avx2<T, kChunks + 1>...};
  return table[chunks - 1];
}

template <typename T>
AttendTileFn<T> attend_tile_fn_avx2(int64_t head_dim) {
  return attend_tile_table_avx2<T>(head_dim / 8, std::make_integer_sequence<int, kMaxHeadDim / 8>{});
}

// All query heads that read KV head kv_head of tokens [t0, t0 + num_tokens): tokens of one
// sequence that see keys from the same first position (attention_units), so one walk over
// the keys serves them all, each row masked to its own num_keys. T is the pool's element type.
// attend: the tile kernel; acc_stride: its acc row length (head_dim rounded up to its
// vector width).
template <typename T>
void attend_unit_tiled(const PagedAttentionArgs& args, const KvLayerView& kv, int64_t t0, int64_t num_tokens,
                       int64_t kv_head, AttendTileFn<T> attend, int64_t acc_stride) {
  const int64_t d = kv.head_dim;
  const int64_t group = args.num_heads / kv.num_kv_heads;
  const int64_t q_stride = args.num_heads * d;
  const int32_t* table = args.block_tables[args.seq_of_token[t0]];
  const int64_t first = first_key(args, t0);
  alignas(64) float acc[kMaxRowsAtOnce * kMaxHeadDim];  // [rows, acc_stride]
  const T* k_rows[kTile];
  const T* v_rows[kTile];
  const float* q_rows[kMaxRowsAtOnce];
  float* out_rows[kMaxRowsAtOnce];
  int64_t row_keys[kMaxRowsAtOnce];  // num_keys of each row
  int64_t counts[kMaxRowsAtOnce];
  RowStates state;

  // Rows in order (token, head); a token with more heads per KV head than fit takes turns.
  const int64_t total_rows = num_tokens * group;
  for (int64_t row0 = 0; row0 < total_rows; row0 += kMaxRowsAtOnce) {
    const int64_t rows = std::min(kMaxRowsAtOnce, total_rows - row0);
    int64_t rows_last = 0;
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t t = t0 + (row0 + i) / group, h = (row0 + i) % group;
      q_rows[i] = args.q + t * q_stride + (kv_head * group + h) * d;
      out_rows[i] = args.out + t * q_stride + (kv_head * group + h) * d;
      row_keys[i] = args.num_keys[t];
      rows_last = std::max(rows_last, row_keys[i]);
      state.max[i] = -std::numeric_limits<float>::infinity();
      state.sum[i] = 0.0f;
    }
    std::memset(acc, 0, sizeof(float) * static_cast<size_t>(rows * acc_stride));
    // Walk the block table incrementally (a division per key costs more than the key).
    int64_t block = first / kv.block_size, offset = first % kv.block_size;  // of position j0 + j
    for (int64_t j0 = first; j0 < rows_last; j0 += kTile) {
      const int64_t count = std::min(kTile, rows_last - j0);
      for (int64_t j = 0; j < count; ++j) {
        const int64_t slot = int64_t{table[block]} * kv.block_size + offset;
        if (++offset == kv.block_size) {
          offset = 0;
          ++block;
        }
        k_rows[j] = kv_row<T>(kv.k, slot, kv_head, kv);
        v_rows[j] = kv_row<T>(kv.v, slot, kv_head, kv);
      }
      for (int64_t i = 0; i < rows; ++i) counts[i] = std::min(kTile, row_keys[i] - j0);
      attend(q_rows, rows, k_rows, v_rows, counts, d, args.scale, state, acc);
    }
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t c = 0; c < d; ++c) out_rows[i][c] = acc[i * acc_stride + c] / state.sum[i];
  }
}

// Portable path for a head_dim that is not a multiple of 8: the same tiled online softmax
// for the query heads of token t that read KV head kv_head, one head at a time, scalar.
void attend_token_scalar(const PagedAttentionArgs& args, const KvLayerView& kv, int64_t t, int64_t kv_head) {
  const int64_t d = kv.head_dim;
  const int64_t group = args.num_heads / kv.num_kv_heads;
  const int64_t q_stride = args.num_heads * d;
  const int32_t* table = args.block_tables[args.seq_of_token[t]];
  const int64_t num_keys = args.num_keys[t];
  const int64_t first = first_key(args, t);
  const bool bf16 = kv.dtype == DType::kBF16;
  auto load = [&](const void* pool, int64_t slot, int64_t i) {
    return bf16 ? bf16_to_float(kv_row<uint16_t>(pool, slot, kv_head, kv)[i])
                : kv_row<float>(pool, slot, kv_head, kv)[i];
  };
  float acc[kMaxHeadDim];
  for (int64_t h = 0; h < group; ++h) {
    const float* q = args.q + t * q_stride + (kv_head * group + h) * d;
    float max = -std::numeric_limits<float>::infinity(), sum = 0.0f;
    std::fill(acc, acc + d, 0.0f);
    for (int64_t j0 = first; j0 < num_keys; j0 += kTile) {
      const int64_t count = std::min(kTile, num_keys - j0);
      float scores[kTile], tile_max = -std::numeric_limits<float>::infinity();
      int64_t slots[kTile];
      for (int64_t j = 0; j < count; ++j) {
        const int64_t pos = j0 + j;
        slots[j] = int64_t{table[pos / kv.block_size]} * kv.block_size + pos % kv.block_size;
        float dot = 0.0f;
        for (int64_t i = 0; i < d; ++i) dot += q[i] * load(kv.k, slots[j], i);
        scores[j] = dot * args.scale;
        tile_max = std::max(tile_max, scores[j]);
      }
      const float new_max = std::max(max, tile_max);
      const float correction = std::exp(max - new_max);
      sum *= correction;
      for (int64_t i = 0; i < d; ++i) acc[i] *= correction;
      for (int64_t j = 0; j < count; ++j) {
        const float p = std::exp(scores[j] - new_max);
        sum += p;
        for (int64_t i = 0; i < d; ++i) acc[i] += p * load(kv.v, slots[j], i);
      }
      max = new_max;
    }
    float* out = args.out + t * q_stride + (kv_head * group + h) * d;
    for (int64_t i = 0; i < d; ++i) out[i] = acc[i] / sum;
  }
}

// All query heads that read KV head kv_head of the unit's tokens [t0, t0 + num_tokens).
void attend_unit(const PagedAttentionArgs& args, const KvLayerView& kv, int64_t t0, int64_t num_tokens,
                 int64_t kv_head) {
  const int64_t d = kv.head_dim;
  if (simd::wide()) {
    const int64_t stride = (d + 15) / 16 * 16;
    if (kv.dtype == DType::kBF16)
      attend_unit_tiled<uint16_t>(args, kv, t0, num_tokens, kv_head, attend_tile_fn_avx512<uint16_t>(d), stride);
    else attend_unit_tiled<float>(args, kv, t0, num_tokens, kv_head, attend_tile_fn_avx512<float>(d), stride);
    return;
  }
  if (d % 8 == 0) {
    if (kv.dtype == DType::kBF16)
      attend_unit_tiled<uint16_t>(args, kv, t0, num_tokens, kv_head, attend_tile_fn_avx2<uint16_t>(d), d);
    else attend_unit_tiled<float>(args, kv, t0, num_tokens, kv_head, attend_tile_fn_avx2<float>(d), d);
    return;
  }
  for (int64_t t = t0; t < t0 + num_tokens; ++t) attend_token_scalar(args, kv, t, kv_head);
}

// Units of work per KV head: runs of consecutive tokens of one sequence whose keys start at
// the same position (all of a causal step's tokens without a window), as many tokens as
// fill kMaxRowsAtOnce query rows, a long run split into equal parts. One walk over the keys
// then serves every row of a unit. units: [first token, token count] pairs.
void attention_units(const PagedAttentionArgs& args, int64_t group, std::vector<std::array<int32_t, 2>>& units) {
  const int64_t max_tokens = std::max<int64_t>(1, kMaxRowsAtOnce / group);
  units.clear();
  for (int64_t t0 = 0; t0 < args.num_tokens;) {
    int64_t t1 = t0 + 1;
    while (t1 < args.num_tokens && args.seq_of_token[t1] == args.seq_of_token[t0] &&
           first_key(args, t1) == first_key(args, t0))
      ++t1;
    const int64_t parts = (t1 - t0 + max_tokens - 1) / max_tokens;
    for (int64_t p = 0, t = t0; p < parts; ++p) {
      const int64_t n = (t1 - t + (parts - p) - 1) / (parts - p);
      units.push_back({static_cast<int32_t>(t), static_cast<int32_t>(n)});
      t += n;
    }
    t0 = t1;
  }
}

}  // namespace

void write_kv(const float* k, const float* v, const int64_t* slots, int64_t num_tokens,
              const KvLayerView& kv) {
  check_view(kv);
  const int64_t capacity = kv.num_blocks * kv.block_size;
  for (int64_t t = 0; t < num_tokens; ++t)
    DSPARK_CHECK(slots[t] >= 0 && slots[t] < capacity, "write_kv: slot {} of token {} outside [0, {})",
                 slots[t], t, capacity);
  const int64_t row = kv.num_kv_heads * kv.head_dim;  // elements per token
  for (int64_t t = 0; t < num_tokens; ++t) {
    const int64_t offset = slots[t] * row;
    if (kv.dtype == DType::kF32) {
      std::memcpy(static_cast<float*>(kv.k) + offset, k + t * row, sizeof(float) * static_cast<size_t>(row));
      std::memcpy(static_cast<float*>(kv.v) + offset, v + t * row, sizeof(float) * static_cast<size_t>(row));
    } else {
      simd::f32_to_bf16(k + t * row, static_cast<uint16_t*>(kv.k) + offset, row);
      simd::f32_to_bf16(v + t * row, static_cast<uint16_t*>(kv.v) + offset, row);
    }
  }
}

void paged_attention(const PagedAttentionArgs& args, const KvLayerView& kv) {
  check_view(kv);
  DSPARK_CHECK(kv.head_dim <= kMaxHeadDim, "paged_attention: head_dim {} above the supported {}",
               kv.head_dim, kMaxHeadDim);
  DSPARK_CHECK(args.num_heads > 0 && args.num_heads % kv.num_kv_heads == 0,
               "paged_attention: num_heads {} is not a multiple of num_kv_heads {}", args.num_heads,
               kv.num_kv_heads);
  // Validate everything the parallel loop reads: it cannot throw.
  DSPARK_CHECK(args.window >= 0, "paged_attention: window {} is negative", args.window);
  int64_t total_keys = 0;
  for (int64_t t = 0; t < args.num_tokens; ++t) {
    const int64_t n = args.num_keys[t];
    DSPARK_CHECK(n >= 1, "paged_attention: token {} has num_keys {} (must be >= 1)", t, n);
    const int32_t* table = args.block_tables[args.seq_of_token[t]];
    for (int64_t b = first_key(args, t) / kv.block_size; b < (n + kv.block_size - 1) / kv.block_size; ++b)
      DSPARK_CHECK(table[b] >= 0 && table[b] < kv.num_blocks,
                   "paged_attention: token {} reads block {} (table entry {}) outside [0, {})", t,
                   table[b], b, kv.num_blocks);
    total_keys += n - first_key(args, t);
  }
  // Reused across calls: no allocation once it has grown to the largest step.
  // (thread_local: the calling thread's list; the team reads it through `unit`.)
  thread_local std::vector<std::array<int32_t, 2>> units;
  attention_units(args, args.num_heads / kv.num_kv_heads, units);
  const std::array<int32_t, 2>* unit = units.data();
  const int64_t work = static_cast<int64_t>(units.size()) * kv.num_kv_heads;
  const bool parallel = work > 1 && 2 * total_keys * args.num_heads * kv.head_dim >= kParallelMinMacs;
  // Units are independent and each is computed whole by one thread, so the schedule
  // (dynamic: causal rows have unequal lengths) never changes any result.
  parallel_for_dynamic(work, parallel, [&](int64_t u) {
    const auto [t0, n] = unit[u / kv.num_kv_heads];
    attend_unit(args, kv, t0, n, u % kv.num_kv_heads);
  });
}

}  // namespace dspark
