// The attention tile with 16-lane vectors (AVX-512 F/BW/VL/DQ; kernels/isa/attention_tile.h).
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
struct AddLanes {
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

struct Tile {
  template <typename T, int kChunks>
  static constexpr AttendTileFn<T> run = attend_tile<T, kChunks>;
};

}  // namespace

AttendTiles attend_tiles_avx512(int64_t head_dim) {
  return attend_tiles_for<Tile, kMaxHeadDim / 16>((head_dim + 15) / 16);
}

}  // namespace dspark::kernels
