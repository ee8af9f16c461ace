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

// Per query head running state of the online softmax.
struct HeadState {
  float max;
  float sum;
};

// One tile of keys for `num_rows` query rows (heads, of one or more tokens) that share a
// KV head. q: [num_rows] rows of head_dim; k_rows/v_rows: the tile's rows of T (f32 or bf16
// bits); counts: [num_rows] keys of the tile each row sees (a row with none is left as it
// is); acc: [num_rows, head_dim rounded up to the vector width]. A row's operations depend
// on its own count only.
template <typename T>
using AttendTileFn = void (*)(const float* const*, int64_t, const T* const*, const T* const*, const int64_t*,
                              int64_t, float, HeadState*, float*);

DSPARK_AVX512_BEGIN

// Lane sums of 16 vectors: result lane j = sum of the lanes of v[j]. Every v[j] is summed
// by the same tree (lane i + lane i+8, then +4, +2, +1), whatever its position j.
inline __m512 sum_lanes_of_16(const __m512* v) {
  __m512 w[8], x[4], y[2];
  for (int j = 0; j < 8; ++j)  // 256-bit halves: w[j] = [v[2j] lo+hi | v[2j+1] lo+hi]
    w[j] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * j], v[2 * j + 1], 0x44),
                         _mm512_shuffle_f32x4(v[2 * j], v[2 * j + 1], 0xEE));
  for (int j = 0; j < 4; ++j)  // 128-bit lanes: x[j] lane L = 4 partials of v[4j + L]
    x[j] = _mm512_add_ps(_mm512_shuffle_f32x4(w[2 * j], w[2 * j + 1], 0x88),
                         _mm512_shuffle_f32x4(w[2 * j], w[2 * j + 1], 0xDD));
  for (int j = 0; j < 2; ++j)  // pairs within lanes
    y[j] = _mm512_add_ps(_mm512_shuffle_ps(x[2 * j], x[2 * j + 1], 0x44),
                         _mm512_shuffle_ps(x[2 * j], x[2 * j + 1], 0xEE));
  const __m512 z = _mm512_add_ps(_mm512_shuffle_ps(y[0], y[1], 0x88), _mm512_shuffle_ps(y[0], y[1], 0xDD));
  // z lane 4L + i holds v[4i + L]; put v[j] in lane j.
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(order, z);
}

// 16 (masked) elements of a KV row as f32: f32 rows load, bf16 rows widen in registers.
inline __m512 load_kv(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
inline __m512 load_kv(const uint16_t* p, __mmask16 m) { return simd::load_bf16(p, m); }

// AttendTileFn with 16-lane vectors; acc rows of kChunks * 16.
template <typename T, int kChunks>
void attend_tile(const float* const* q, int64_t num_rows, const T* const* k_rows,
                 const T* const* v_rows, const int64_t* counts, int64_t head_dim, float scale,
                 HeadState* state, float* acc) {
  __mmask16 chunk_mask[kChunks];
  for (int c = 0; c < kChunks; ++c) chunk_mask[c] = simd::lanes(head_dim - 16 * c);
  alignas(64) float probs[kMaxRowsAtOnce][kTile];  // [row][key]: exp(score - running max)
  float corrections[kMaxRowsAtOnce];               // [row]: exp(old max - new max)
  // Scores and the online softmax of every row first.
  for (int64_t h = 0; h < num_rows; ++h) {
    const int64_t count = counts[h];
    if (count <= 0) continue;
    const __mmask16 valid_lo = simd::lanes(count), valid_hi = simd::lanes(count - 16);
    __m512 qv[kChunks];
    for (int c = 0; c < kChunks; ++c) qv[c] = _mm512_maskz_loadu_ps(chunk_mask[c], q[h] + 16 * c);
    // Scores of the tile's keys, 16 at a time: per key a 16-lane partial dot product, then
    // one transposing reduction for the 16 keys (cheaper than 16 horizontal sums).
    const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    __m512 s_half[2];
    for (int half = 0; half < 2; ++half) {
      const int64_t base = 16 * half;
      if (base >= count) {
        s_half[half] = neg_inf;
        continue;
      }
      __m512 partial[16];
      for (int64_t j = 0; j < 16; ++j) {
        if (base + j >= count) {
          partial[j] = _mm512_setzero_ps();
          continue;
        }
        const T* k = k_rows[base + j];
        __m512 dot = _mm512_mul_ps(qv[0], load_kv(k, chunk_mask[0]));
        for (int c = 1; c < kChunks; ++c) dot = _mm512_fmadd_ps(qv[c], load_kv(k + 16 * c, chunk_mask[c]), dot);
        partial[j] = dot;
      }
      s_half[half] = _mm512_mul_ps(sum_lanes_of_16(partial), _mm512_set1_ps(scale));
    }
    const __m512 s_lo = _mm512_mask_mov_ps(neg_inf, valid_lo, s_half[0]);
    const __m512 s_hi = _mm512_mask_mov_ps(neg_inf, valid_hi, s_half[1]);
    const float tile_max = _mm512_reduce_max_ps(_mm512_max_ps(s_lo, s_hi));
    const float new_max = std::max(state[h].max, tile_max);
    // First tile: max is -inf, exp(-inf) = 0 clears the (zero) state.
    const float correction = std::exp(state[h].max - new_max);
    const __m512 m = _mm512_set1_ps(new_max);
    const __m512 p_lo = _mm512_maskz_mov_ps(valid_lo, simd::exp(_mm512_sub_ps(s_lo, m)));
    const __m512 p_hi = _mm512_maskz_mov_ps(valid_hi, simd::exp(_mm512_sub_ps(s_hi, m)));
    _mm512_store_ps(probs[h], p_lo);
    _mm512_store_ps(probs[h] + 16, p_hi);
    corrections[h] = correction;
    state[h].sum = state[h].sum * correction + _mm512_reduce_add_ps(_mm512_add_ps(p_lo, p_hi));
    state[h].max = new_max;
  }
  // Then p·v, row by row: each row's chain of dependent steps above (reductions, exp) is
  // short next to the work of the next row's scores, so the core overlaps them.
  for (int64_t h = 0; h < num_rows; ++h) {
    const int64_t count = counts[h];
    if (count <= 0) continue;
    const float* p = probs[h];
    const float correction = corrections[h];
    float* a = acc + h * kChunks * 16;
    // Two accumulator sets (keys at even / odd offsets in the tile) halve the fma chain;
    // they are added in a fixed order at the end of the tile.
    __m512 even[kChunks], odd[kChunks];
    const __m512 corr = _mm512_set1_ps(correction);
    for (int c = 0; c < kChunks; ++c) {
      even[c] = _mm512_mul_ps(_mm512_load_ps(a + 16 * c), corr);
      odd[c] = _mm512_setzero_ps();
    }
    int64_t j = 0;
    for (; j + 1 < count; j += 2) {
      const __m512 pe = _mm512_set1_ps(p[j]), po = _mm512_set1_ps(p[j + 1]);
      for (int c = 0; c < kChunks; ++c) {
        even[c] = _mm512_fmadd_ps(pe, load_kv(v_rows[j] + 16 * c, chunk_mask[c]), even[c]);
        odd[c] = _mm512_fmadd_ps(po, load_kv(v_rows[j + 1] + 16 * c, chunk_mask[c]), odd[c]);
      }
    }
    if (j < count) {
      const __m512 pe = _mm512_set1_ps(p[j]);
      for (int c = 0; c < kChunks; ++c)
        even[c] = _mm512_fmadd_ps(pe, load_kv(v_rows[j] + 16 * c, chunk_mask[c]), even[c]);
    }
    __m512 av[kChunks];
    for (int c = 0; c < kChunks; ++c) av[c] = _mm512_add_ps(even[c], odd[c]);
    for (int c = 0; c < kChunks; ++c) _mm512_store_ps(a + 16 * c, av[c]);
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

// AttendTileFn with 8-lane vectors (AVX2, the build's baseline), for head_dim a multiple of
// 8 = kChunks * 8; acc rows of head_dim.
template <typename T, int kChunks>
void attend_tile_avx2(const float* const* q, int64_t num_rows, const T* const* k_rows, const T* const* v_rows,
                      const int64_t* counts, int64_t head_dim, float scale, HeadState* state, float* acc) {
  for (int64_t h = 0; h < num_rows; ++h) {
    const int64_t count = counts[h];
    if (count <= 0) continue;
    alignas(32) float s[kTile];
    int64_t j = 0;
    // Eight keys at a time: one FMA chain per key over the chunks (eight chains in flight),
    // then one transposing reduction gives the eight scores (a lane sum per key cost as much
    // as its dot product).
    for (; j + 8 <= count; j += 8) {
      __m256 dot[8];
      const __m256 q0 = _mm256_loadu_ps(q[h]);
      for (int u = 0; u < 8; ++u) dot[u] = _mm256_mul_ps(q0, load_kv8(k_rows[j + u]));
      for (int c = 1; c < kChunks; ++c) {
        const __m256 qc = _mm256_loadu_ps(q[h] + 8 * c);
        for (int u = 0; u < 8; ++u) dot[u] = _mm256_fmadd_ps(qc, load_kv8(k_rows[j + u] + 8 * c), dot[u]);
      }
      _mm256_store_ps(s + j, _mm256_mul_ps(lane_sums_of_8x8(dot), _mm256_set1_ps(scale)));
    }
    for (; j < count; ++j) {
      // Two chains (even and odd chunks), added at the end: half the FMA latency per key.
      const T* k = k_rows[j];
      __m256 dot[2] = {_mm256_mul_ps(_mm256_loadu_ps(q[h]), load_kv8(k)), _mm256_setzero_ps()};
      for (int c = 1; c < kChunks; ++c)
        dot[c & 1] = _mm256_fmadd_ps(_mm256_loadu_ps(q[h] + 8 * c), load_kv8(k + 8 * c), dot[c & 1]);
      s[j] = sum_lanes_of_8(_mm256_add_ps(dot[0], dot[1])) * scale;
    }
    float tile_max = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < count; ++j) tile_max = std::max(tile_max, s[j]);
    const float new_max = std::max(state[h].max, tile_max);
    // First tile: max is -inf, exp(-inf) = 0 clears the (zero) state.
    const float correction = std::exp(state[h].max - new_max);
    const __m256 m = _mm256_set1_ps(new_max);
    __m256 total = _mm256_setzero_ps();
    for (int64_t j0 = 0; j0 < count; j0 += 8) {  // p of the valid keys, 0 beyond count
      const __m256 valid = _mm256_castsi256_ps(simd::lanes8(count - j0));
      const __m256 p = _mm256_and_ps(valid, simd::exp8(_mm256_sub_ps(_mm256_load_ps(s + j0), m)));
      _mm256_store_ps(s + j0, p);
      total = _mm256_add_ps(total, p);
    }
    state[h].sum = state[h].sum * correction + sum_lanes_of_8(total);
    state[h].max = new_max;
    float* a = acc + h * head_dim;
    const __m256 corr = _mm256_set1_ps(correction);
    __m256 av[kChunks];
    for (int c = 0; c < kChunks; ++c) av[c] = _mm256_mul_ps(_mm256_loadu_ps(a + 8 * c), corr);
    for (int64_t j = 0; j < count; ++j) {
      const __m256 p = _mm256_set1_ps(s[j]);
      for (int c = 0; c < kChunks; ++c) av[c] = _mm256_fmadd_ps(p, load_kv8(v_rows[j] + 8 * c), av[c]);
    }
    for (int c = 0; c < kChunks; ++c) _mm256_storeu_ps(a + 8 * c, av[c]);
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
  HeadState state[kMaxRowsAtOnce];

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
      state[i] = {-std::numeric_limits<float>::infinity(), 0.0f};
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
      for (int64_t c = 0; c < d; ++c) out_rows[i][c] = acc[i * acc_stride + c] / state[i].sum;
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
