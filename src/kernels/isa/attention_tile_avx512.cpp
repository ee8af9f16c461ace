// The attention tile with 16-lane vectors (AVX-512 F/BW/VL/DQ; kernels/isa/attention_tile.h).
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

// p·v of kRows consecutive rows over the tile's first `count` keys (the most any of them
// sees; a row's probs are 0 beyond its own count): acc[r] = acc[r] * corrections[r] +
// Σ_j probs[r][j] v_j. Per row and lane two accumulators (keys at even / odd offsets) halve
// the FMA chain and are added at the end. kAtOnce 16-lane chunks of the head at a time, so
// that each V load serves all kRows rows and 16 accumulators are in flight: all of a
// 64-wide head for 1 or 2 rows, one chunk for 8. A row's operations are the same whatever
// kRows and the other rows: a key beyond its own count adds 0 * v, which leaves an
// accumulator as it is (it is never -0: it starts at +0 and round-to-nearest sums give +0).
constexpr int kMaxGroupRows = 8;
template <typename T, int kChunks, int kRows>
inline void pv_rows(const float (*probs)[kTile], const float* corrections, int64_t count, const T* const* v_rows,
                    const __mmask16* chunk_mask, float* acc) {
  constexpr int kAtOnce = std::min(kChunks, 8 / kRows);
  for (int c0 = 0; c0 < kChunks; c0 += kAtOnce) {
    constexpr int n = kAtOnce;
    __m512 even[kRows][n], odd[kRows][n];
    for (int r = 0; r < kRows; ++r) {
      const __m512 corr = _mm512_set1_ps(corrections[r]);
      for (int c = 0; c < n; ++c) {
        if (c0 + c >= kChunks) break;
        even[r][c] = _mm512_mul_ps(_mm512_load_ps(acc + (r * kChunks + c0 + c) * 16), corr);
        odd[r][c] = _mm512_setzero_ps();
      }
    }
    int64_t j = 0;
    for (; j + 1 < count; j += 2) {
      for (int c = 0; c < n; ++c) {
        if (c0 + c >= kChunks) break;
        const __m512 ve = load_kv(v_rows[j] + 16 * (c0 + c), chunk_mask[c0 + c]);
        const __m512 vo = load_kv(v_rows[j + 1] + 16 * (c0 + c), chunk_mask[c0 + c]);
        for (int r = 0; r < kRows; ++r) {
          even[r][c] = _mm512_fmadd_ps(_mm512_set1_ps(probs[r][j]), ve, even[r][c]);
          odd[r][c] = _mm512_fmadd_ps(_mm512_set1_ps(probs[r][j + 1]), vo, odd[r][c]);
        }
      }
    }
    if (j < count) {
      for (int c = 0; c < n; ++c) {
        if (c0 + c >= kChunks) break;
        const __m512 ve = load_kv(v_rows[j] + 16 * (c0 + c), chunk_mask[c0 + c]);
        for (int r = 0; r < kRows; ++r) even[r][c] = _mm512_fmadd_ps(_mm512_set1_ps(probs[r][j]), ve, even[r][c]);
      }
    }
    for (int r = 0; r < kRows; ++r)
      for (int c = 0; c < n; ++c) {
        if (c0 + c >= kChunks) break;
        _mm512_store_ps(acc + (r * kChunks + c0 + c) * 16, _mm512_add_ps(even[r][c], odd[r][c]));
      }
  }
}

// 16 elements of a K group (16 keys of one element of the head) as f32.
inline __m512 load_keys(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 load_keys(const uint16_t* p) { return simd::load_bf16(p, 0xFFFF); }

// q·k of kRows rows for kGroups groups of 16 keys (K columns `cols`, element i of the head
// at cols[g] + i * stride), keys in the lanes: per row and group two FMA chains over the
// head's elements, the even and the odd ones, added at the end (2 x kRows x kGroups
// independent chains), each K vector serving all kRows rows.
template <typename T, int kRows, int kGroups>
inline void dot_groups(const float* const* q, const T* const* cols, int64_t stride, int64_t head_dim,
                       __m512 (*dot)[2]) {
  __m512 even[kRows][kGroups], odd[kRows][kGroups];
  for (int r = 0; r < kRows; ++r)
    for (int g = 0; g < kGroups; ++g) even[r][g] = odd[r][g] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 1 < head_dim; i += 2) {
    __m512 ke[kGroups], ko[kGroups];
    for (int g = 0; g < kGroups; ++g) {
      ke[g] = load_keys(cols[g] + i * stride);
      ko[g] = load_keys(cols[g] + (i + 1) * stride);
    }
    for (int r = 0; r < kRows; ++r) {
      const __m512 qe = _mm512_set1_ps(q[r][i]), qo = _mm512_set1_ps(q[r][i + 1]);
      for (int g = 0; g < kGroups; ++g) {
        even[r][g] = _mm512_fmadd_ps(qe, ke[g], even[r][g]);
        odd[r][g] = _mm512_fmadd_ps(qo, ko[g], odd[r][g]);
      }
    }
  }
  if (i < head_dim)
    for (int g = 0; g < kGroups; ++g) {
      const __m512 k = load_keys(cols[g] + i * stride);
      for (int r = 0; r < kRows; ++r) even[r][g] = _mm512_fmadd_ps(_mm512_set1_ps(q[r][i]), k, even[r][g]);
    }
  for (int r = 0; r < kRows; ++r)
    for (int g = 0; g < kGroups; ++g) dot[r][g] = _mm512_add_ps(even[r][g], odd[r][g]);
}

// Scaled scores q·k of kRows consecutive rows into probs[r] (-inf outside the keys
// [skip, counts[r]) the row sees), and each row's lane-wise maximum into row_max[r].
// `groups`: 1, or 2 where some row sees keys past the first 16. Up to 4 rows take both
// groups at once (fewer chains would leave the FMA units waiting on their latency), 8 rows
// one group at a time (16 accumulators either way); a row's operations are the same.
template <typename T, int kRows>
inline void scores_rows(const float* const* q, const KeyTile<T>& keys, int64_t groups, int64_t head_dim,
                        const int64_t* counts, float scale, float (*probs)[kTile], __m512* row_max) {
  __m512 dot[kRows][2];  // [row][group]
  if (kRows <= 4 && groups == 2) {
    dot_groups<T, kRows, 2>(q, keys.groups, keys.stride, head_dim, dot);
  } else {
    for (int64_t g = 0; g < groups; ++g) {
      __m512 one[kRows][2];
      dot_groups<T, kRows, 1>(q, keys.groups + g, keys.stride, head_dim, one);
      for (int r = 0; r < kRows; ++r) dot[r][g] = one[r][0];
    }
  }
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const __m512 scale16 = _mm512_set1_ps(scale);
  for (int r = 0; r < kRows; ++r) {
    row_max[r] = neg_inf;
    for (int g = 0; g < 2; ++g) {
      const int64_t base = kAttentionKeyGroup * g;
      const __mmask16 seen = static_cast<__mmask16>(simd::lanes(counts[r] - base) & ~simd::lanes(keys.skip - base));
      const __m512 sc = g < groups ? _mm512_mask_mov_ps(neg_inf, seen, _mm512_mul_ps(dot[r][g], scale16)) : neg_inf;
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
void attend_tile(const float* const* q, int64_t num_rows, const KeyTile<T>& keys, const T* const* v_rows,
                 const int64_t* counts, int64_t head_dim, float scale, RowStates& state, float* acc) {
  static_assert(kMaxRowsAtOnce % 16 == 0 && kMaxRowsAtOnce <= 32, "one lane per row, 16 rows to a vector");
  const int64_t vectors = (num_rows + 15) / 16;  // of row states
  __mmask16 chunk_mask[kChunks];
  for (int c = 0; c < kChunks; ++c) chunk_mask[c] = simd::lanes(head_dim - 16 * c);
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  alignas(64) float probs[kMaxRowsAtOnce][kTile];  // [row][key]: scaled scores, then exp(score - new max)
  __m512 row_max[kMaxRowsAtOnce];  // [row]: lane-wise max of the row's 16-key parts of scores
  __m512 row_sum[kMaxRowsAtOnce];  // [row]: lane-wise sum of the row's 16-key parts of p
  uint32_t active = 0;             // rows that see keys in this tile
  for (int64_t h = 0; h < num_rows; ++h) active |= (counts[h] > keys.skip ? 1u : 0u) << h;
  for (int64_t h = 0; h < 16 * vectors; ++h) row_max[h] = neg_inf;
  // Scores and p·v take groups of up to 8 active rows, sharing each K and V load.
  auto is_active = [&](int64_t h) { return (active >> h & 1u) != 0; };
  for_each_row_group<kMaxGroupRows>(num_rows, counts, is_active, [&](auto rows, int64_t h, int64_t count) {
    const int64_t groups = count > kAttentionKeyGroup ? 2 : 1;
    scores_rows<T, decltype(rows)::value>(q + h, keys, groups, head_dim, counts + h, scale, probs + h, row_max + h);
  });
  // Every row's new maximum and correction, 16 rows at once. The first tile's old maximum is
  // -inf: its correction is (nearly) 0 and multiplies a zero state.
  alignas(64) float corrections[kMaxRowsAtOnce], maxima[kMaxRowsAtOnce];
  for (int64_t v = 0; v < vectors; ++v) {
    const __m512 old_max = _mm512_load_ps(state.max + 16 * v);
    const __m512 new_max = _mm512_max_ps(old_max, max_lanes_of_16(row_max + 16 * v));
    _mm512_store_ps(corrections + 16 * v, simd::exp(_mm512_sub_ps(old_max, new_max)));
    _mm512_store_ps(maxima + 16 * v, new_max);
  }
  // p = exp(score - new max), 0 for the keys the row does not see.
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
      const __mmask16 seen =
          static_cast<__mmask16>(simd::lanes(count - 16 * part) & ~simd::lanes(keys.skip - 16 * part));
      const __m512 p = _mm512_maskz_mov_ps(seen, simd::exp(_mm512_sub_ps(_mm512_load_ps(ps), m)));
      _mm512_store_ps(ps, p);
      total = part == 0 ? p : _mm512_add_ps(total, p);
    }
    row_sum[h] = total;
  }
  for (int64_t h = num_rows; h < 16 * vectors; ++h) row_sum[h] = _mm512_setzero_ps();
  for (int64_t v = 0; v < vectors; ++v) {
    const __mmask16 rows_active = static_cast<__mmask16>(active >> (16 * v));
    const __m512 sum = _mm512_fmadd_ps(_mm512_load_ps(state.sum + 16 * v), _mm512_load_ps(corrections + 16 * v),
                                       sum_lanes_of_16(row_sum + 16 * v));
    _mm512_mask_store_ps(state.sum + 16 * v, rows_active, sum);
    _mm512_mask_store_ps(state.max + 16 * v, rows_active, _mm512_load_ps(maxima + 16 * v));
  }
  // Then p·v.
  for_each_row_group<kMaxGroupRows>(num_rows, counts, is_active, [&](auto rows, int64_t h, int64_t count) {
    pv_rows<T, kChunks, decltype(rows)::value>(probs + h, corrections + h, count, v_rows, chunk_mask,
                                               acc + h * kChunks * 16);
  });
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
