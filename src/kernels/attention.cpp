#include "kernels/attention.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/check.h"
#include "core/thread_pool.h"
#include "kernels/isa/attention_tile.h"
#include "kernels/simd.h"

namespace dspark {
namespace {

using kernels::AttendTileFn;
constexpr int64_t kTile = kernels::kAttentionTile;
constexpr int64_t kMaxHeadDim = kernels::kMaxAttentionHeadDim;
constexpr int64_t kMaxRowsAtOnce = kernels::kMaxAttentionRows;
constexpr int64_t kKeyGroup = kernels::kAttentionKeyGroup;
// KV rows requested ahead of the key the tiles compute on.
constexpr int64_t kPrefetchKeys = 2 * kTile;
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

// A position of a sequence as block and offset, moved forward over the block table
// incrementally (a division per step costs more than a key).
struct SlotWalker {
  SlotWalker(const int32_t* table, int64_t block_size, int64_t first)
      : table(table), block_size(block_size), block(first / block_size), offset(first % block_size) {}
  void advance(int64_t n) {
    offset += n;
    for (; offset >= block_size; offset -= block_size) ++block;
  }
  int64_t block_id() const { return table[block]; }
  int64_t slot() const { return block_id() * block_size + offset; }
  const int32_t* table;
  int64_t block_size, block, offset;
};

// All query heads that read KV head kv_head of tokens [t0, t0 + num_tokens): tokens of one
// sequence that see keys from the same first position (attention_units), so one walk over
// the keys serves them all, each row masked to its own num_keys. T is the pool's element type.
// attend: the tile kernel; acc_stride: its acc row length (head_dim rounded up to its
// vector width). Tiles start at the first visible position rounded down to a multiple of 16,
// so that each 16-key group of a tile lies in one block where block_size is a multiple of 16
// and its K is read in place; other block sizes copy each group's K columns out first.
template <typename T>
void attend_unit_tiled(const PagedAttentionArgs& args, const KvLayerView& kv, int64_t t0, int64_t num_tokens,
                       int64_t kv_head, AttendTileFn<T> attend, int64_t acc_stride) {
  const int64_t d = kv.head_dim, bs = kv.block_size;
  const int64_t group = args.num_heads / kv.num_kv_heads;
  const int64_t q_stride = args.num_heads * d;
  const int32_t* table = args.block_tables[args.seq_of_token[t0]];
  const int64_t first = first_key(args, t0);
  const int64_t start = first / kKeyGroup * kKeyGroup;
  const bool in_place = bs % kKeyGroup == 0;
  const T* k_pool = static_cast<const T*>(kv.k);
  const int64_t v_row_bytes = d * static_cast<int64_t>(sizeof(T));
  alignas(64) float acc[kMaxRowsAtOnce * kMaxHeadDim];  // [rows, acc_stride]
  alignas(64) T copied[2][kMaxHeadDim * kKeyGroup];      // [group][element, key]: K columns not read in place
  const T* v_rows[2][kTile];  // [this tile, the next][key]
  const float* q_rows[kMaxRowsAtOnce];
  float* out_rows[kMaxRowsAtOnce];
  int64_t row_keys[kMaxRowsAtOnce];  // num_keys of each row
  int64_t counts[kMaxRowsAtOnce];
  kernels::AttentionRowStates state;

  // Where K column 0 of kv_head starts for the key at `offset` of block `block_id`.
  auto k_column = [&](int64_t block_id, int64_t offset) {
    return k_pool + key_index_in_block(kv, block_id, offset, kv_head, 0);
  };
  // K columns of the 16 keys from position p (a multiple of 16) that are visible, up to hi;
  // `walk` is at p where they are read in place.
  auto key_group = [&](int64_t p, int64_t hi, int64_t g, const SlotWalker& walk) -> const T* {
    if (p >= hi) return nullptr;
    if (in_place) return k_column(walk.block_id(), walk.offset);
    std::fill_n(copied[g], d * kKeyGroup, T{});
    for (int64_t j = std::max(p, first); j < std::min(p + kKeyGroup, hi); ++j) {
      const T* column = k_column(table[j / bs], j % bs);
      for (int64_t i = 0; i < d; ++i) copied[g][i * kKeyGroup + j - p] = column[i * bs];
    }
    return copied[g];
  };

  // V row of kv_head at position p.
  const T* v_pool = static_cast<const T*>(kv.v);
  auto v_row = [&](int64_t p) {
    return v_pool + value_index(kv, int64_t{table[p / bs]} * bs + p % bs, kv_head, 0);
  };
  const T* first_v = v_row(first);
  // Calls use(j, V row of key j) for the keys [lo, hi) of the 16-key group from position p,
  // `walk` being at p. In place the group's positions are consecutive offsets of one block, so
  // their rows are v_stride apart from the first (one table lookup a group); otherwise each
  // key's slot is looked up on its own.
  const int64_t v_stride = kv.num_kv_heads * d;  // elements from one position's V row to the next
  auto for_each_v_row = [&](const SlotWalker& walk, int64_t p, int64_t lo, int64_t hi, auto&& use) {
    if (!in_place) {
      for (int64_t j = lo; j < hi; ++j) use(j, v_row(j));
      return;
    }
    const T* group_v = v_pool + value_index(kv, walk.slot(), kv_head, 0);
    for (int64_t j = lo; j < hi; ++j) use(j, group_v + (j - p) * v_stride);
  };
  // In place, a group's columns are d runs of 16 keys, block_size elements apart: contiguous
  // where block_size is 16, so a request every 64 bytes covers them.
  const int64_t k_line_step = bs == kKeyGroup ? std::max<int64_t>(1, 64 / (kKeyGroup * sizeof(T))) : 1;

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
    // Requests run kPrefetchKeys keys ahead of the tiles being gathered: each 16-key group's
    // K columns (in place) and its visible keys' V rows. A step's weights push every KV row
    // out of the caches between uses, and the tile's own loads, issued as its arithmetic
    // reaches them, kept too few rows in flight. Requests and V row pointers are made a group
    // at a time: in place, a group's keys lie in one block, so they follow from its block and
    // offset (walking the block table key by key cost 11-18% of a one-token call whose KV is
    // in cache).
    SlotWalker ahead(table, bs, start), gathered(table, bs, start);  // at group starts
    int64_t requested = start;  // groups [start, requested) requested
    auto request_until = [&](int64_t until) {
      for (; requested < std::min(until, rows_last); requested += kKeyGroup, ahead.advance(kKeyGroup)) {
        if (in_place) {
          const T* column = k_column(ahead.block_id(), ahead.offset);
          for (int64_t i = 0; i < d; i += k_line_step) __builtin_prefetch(column + i * bs, 0, 3);
        }
        const int64_t lo = std::max(requested, first), hi = std::min(requested + kKeyGroup, rows_last);
        for_each_v_row(ahead, requested, lo, hi, [&](int64_t, const T* row) {
          for (int64_t byte = 0; byte < v_row_bytes; byte += 64)
            __builtin_prefetch(reinterpret_cast<const char*>(row) + byte, 0, 3);
        });
      }
    };
    // Each tile's V row pointers are gathered while the previous tile is still to compute
    // (gathering each just before its tile measured slower, up to 20% in 6 of 8 pairs of
    // bf16 one-token steps at 896 positions). Keys before `first` get first's row: no row
    // sees them (p = 0), and their blocks may be freed.
    auto gather = [&](int64_t j0, const T** vs) {
      for (int64_t p = j0; p < std::min(j0 + kTile, rows_last); p += kKeyGroup, gathered.advance(kKeyGroup)) {
        const int64_t lo = std::max(p, first), hi = std::min(p + kKeyGroup, rows_last);
        for (int64_t j = p; j < lo; ++j) vs[j - j0] = first_v;
        for_each_v_row(gathered, p, lo, hi, [&](int64_t j, const T* row) { vs[j - j0] = row; });
      }
    };
    int cur = 0;
    request_until(start + kTile + kPrefetchKeys);
    gather(start, v_rows[0]);
    SlotWalker groups(table, bs, start);  // at each tile's first group (read in place only)
    for (int64_t j0 = start; j0 < rows_last; j0 += kTile) {
      if (j0 + kTile < rows_last) gather(j0 + kTile, v_rows[cur ^ 1]);
      request_until(j0 + 2 * kTile + kPrefetchKeys);
      kernels::KeyTile<T> tile;
      tile.groups[0] = key_group(j0, rows_last, 0, groups);
      groups.advance(kKeyGroup);
      tile.groups[1] = key_group(j0 + kKeyGroup, rows_last, 1, groups);
      groups.advance(kKeyGroup);
      tile.stride = in_place ? bs : kKeyGroup;
      tile.skip = std::max<int64_t>(0, first - j0);
      for (int64_t i = 0; i < rows; ++i) counts[i] = std::min(kTile, row_keys[i] - j0);
      attend(q_rows, rows, tile, v_rows[cur], counts, d, args.scale, state, acc);
      cur ^= 1;
    }
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t c = 0; c < d; ++c) out_rows[i][c] = acc[i * acc_stride + c] / state.sum[i];
  }
}

// Portable path for a head_dim that is not a multiple of 8: the same tiles of the online
// softmax for the query heads of token t that read KV head kv_head, one head at a time, scalar.
void attend_token_scalar(const PagedAttentionArgs& args, const KvLayerView& kv, int64_t t, int64_t kv_head) {
  const int64_t d = kv.head_dim;
  const int64_t group = args.num_heads / kv.num_kv_heads;
  const int64_t q_stride = args.num_heads * d;
  const int32_t* table = args.block_tables[args.seq_of_token[t]];
  const int64_t num_keys = args.num_keys[t];
  const int64_t first = first_key(args, t);
  const bool bf16 = kv.dtype == DType::kBF16;
  auto load = [&](const void* pool, int64_t index) {
    return bf16 ? bf16_to_float(static_cast<const uint16_t*>(pool)[index]) : static_cast<const float*>(pool)[index];
  };
  float acc[kMaxHeadDim];
  for (int64_t h = 0; h < group; ++h) {
    const float* q = args.q + t * q_stride + (kv_head * group + h) * d;
    float max = -std::numeric_limits<float>::infinity(), sum = 0.0f;
    std::fill(acc, acc + d, 0.0f);
    for (int64_t j0 = first / kKeyGroup * kKeyGroup; j0 < num_keys; j0 += kTile) {
      const int64_t lo = std::max(j0, first), count = std::min(j0 + kTile, num_keys) - lo;  // visible keys
      float scores[kTile], tile_max = -std::numeric_limits<float>::infinity();
      int64_t slots[kTile];
      for (int64_t j = 0; j < count; ++j) {
        const int64_t pos = lo + j;
        slots[j] = int64_t{table[pos / kv.block_size]} * kv.block_size + pos % kv.block_size;
        float dot = 0.0f;
        for (int64_t i = 0; i < d; ++i) dot += q[i] * load(kv.k, key_index(kv, slots[j], kv_head, i));
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
        for (int64_t i = 0; i < d; ++i) acc[i] += p * load(kv.v, value_index(kv, slots[j], kv_head, i));
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
  const bool wide = simd::wide();
  if (wide || d % 8 == 0) {
    const kernels::AttendTiles tiles = wide ? kernels::attend_tiles_avx512(d) : kernels::attend_tiles_avx2(d);
    const int64_t stride = wide ? (d + 15) / 16 * 16 : d;
    if (kv.dtype == DType::kBF16) attend_unit_tiled<uint16_t>(args, kv, t0, num_tokens, kv_head, tiles.bf16, stride);
    else attend_unit_tiled<float>(args, kv, t0, num_tokens, kv_head, tiles.f32, stride);
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
  const bool bf16 = kv.dtype == DType::kBF16;
  const int64_t bs = kv.block_size;
  // K goes to transposed blocks: element i of a head lands block_size elements after
  // element i - 1.
  for (int64_t t = 0; t < num_tokens; ++t) {
    const int64_t v_offset = slots[t] * row;
    if (bf16) simd::f32_to_bf16(v + t * row, static_cast<uint16_t*>(kv.v) + v_offset, row);
    else std::memcpy(static_cast<float*>(kv.v) + v_offset, v + t * row, sizeof(float) * static_cast<size_t>(row));
    for (int64_t h = 0; h < kv.num_kv_heads; ++h) {
      const float* head = k + t * row + h * kv.head_dim;  // [head_dim]
      const int64_t base = key_index(kv, slots[t], h, 0);
      if (!bf16) {
        float* out = static_cast<float*>(kv.k) + base;
        for (int64_t i = 0; i < kv.head_dim; ++i) out[i * bs] = head[i];
        continue;
      }
      uint16_t* out = static_cast<uint16_t*>(kv.k) + base;
      uint16_t rounded[64];  // a run of the head in bf16, rounded as V is
      for (int64_t i0 = 0; i0 < kv.head_dim; i0 += 64) {
        const int64_t n = std::min<int64_t>(64, kv.head_dim - i0);
        simd::f32_to_bf16(head + i0, rounded, n);
        for (int64_t i = 0; i < n; ++i) out[(i0 + i) * bs] = rounded[i];
      }
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
