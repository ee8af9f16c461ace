#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "core/check.h"
#include "core/rng.h"
#include "core/threads.h"
#include "kernels/isa.h"
#include "kernels/kernel_test_util.h"

namespace dspark {
namespace {

using testing::EachIsa;
using testing::random_floats;
using testing::same_bits;

// A paged KV pool holding several sequences whose block tables are shuffled (not
// contiguous), filled through write_kv, plus a batch of query rows over those sequences.
struct Fixture {
  int64_t block_size, kv_heads, head_dim, heads;
  DType dtype;
  std::vector<int64_t> seq_lens;
  int64_t num_blocks = 0;
  std::vector<float> k_pool, v_pool;           // f32 pools
  std::vector<uint16_t> k_pool16, v_pool16;    // bf16 pools
  std::vector<std::vector<int32_t>> tables;    // [seqs][blocks]
  std::vector<const int32_t*> table_ptrs;      // [seqs]
  // Query rows.
  std::vector<int32_t> seq_of_token, num_keys;
  std::vector<float> q;                        // [tokens, heads, head_dim]

  Fixture(int64_t block_size_, int64_t kv_heads_, int64_t head_dim_, int64_t heads_, DType dtype_,
          std::vector<int64_t> lens, uint64_t seed)
      : block_size(block_size_), kv_heads(kv_heads_), head_dim(head_dim_), heads(heads_), dtype(dtype_),
        seq_lens(std::move(lens)) {
    for (int64_t len : seq_lens) num_blocks += (len + block_size - 1) / block_size;
    num_blocks += 3;  // unused blocks in between
    std::vector<int32_t> ids(static_cast<size_t>(num_blocks));
    std::iota(ids.begin(), ids.end(), 0);
    Rng rng(seed);
    for (size_t i = ids.size(); i > 1; --i) std::swap(ids[i - 1], ids[rng.next_u64() % i]);
    const size_t pool = static_cast<size_t>(num_blocks * block_size * kv_heads * head_dim);
    if (dtype == DType::kF32) {
      k_pool.assign(pool, NAN);  // unread slots hold NaN: reading one would show
      v_pool.assign(pool, NAN);
    } else {
      k_pool16.assign(pool, 0x7fc0);
      v_pool16.assign(pool, 0x7fc0);
    }
    size_t next = 0;
    for (size_t s = 0; s < seq_lens.size(); ++s) {
      const int64_t len = seq_lens[s];
      std::vector<int32_t> table;
      for (int64_t b = 0; b < (len + block_size - 1) / block_size; ++b) table.push_back(ids[next++]);
      tables.push_back(table);
      const int64_t row = kv_heads * head_dim;
      const auto k = random_floats(static_cast<size_t>(len * row), seed * 31 + s, -1.5f, 1.5f);
      const auto v = random_floats(static_cast<size_t>(len * row), seed * 37 + s, -1.0f, 1.0f);
      std::vector<int64_t> slots(static_cast<size_t>(len));
      for (int64_t p = 0; p < len; ++p) slots[p] = int64_t{table[p / block_size]} * block_size + p % block_size;
      write_kv(k.data(), v.data(), slots.data(), len, view());
    }
    for (const auto& t : tables) table_ptrs.push_back(t.data());
  }

  KvLayerView view() {
    KvLayerView kv;
    kv.k = dtype == DType::kF32 ? static_cast<void*>(k_pool.data()) : static_cast<void*>(k_pool16.data());
    kv.v = dtype == DType::kF32 ? static_cast<void*>(v_pool.data()) : static_cast<void*>(v_pool16.data());
    kv.dtype = dtype;
    kv.num_blocks = num_blocks;
    kv.block_size = block_size;
    kv.num_kv_heads = kv_heads;
    kv.head_dim = head_dim;
    return kv;
  }

  void add_query(int32_t seq, int32_t keys, uint64_t seed) {
    seq_of_token.push_back(seq);
    num_keys.push_back(keys);
    const auto row = random_floats(static_cast<size_t>(heads * head_dim), seed, -2.0f, 2.0f);
    q.insert(q.end(), row.begin(), row.end());
  }

  int64_t tokens() const { return static_cast<int64_t>(seq_of_token.size()); }

  PagedAttentionArgs args(float* out) const {
    PagedAttentionArgs a;
    a.q = q.data();
    a.out = out;
    a.num_tokens = tokens();
    a.num_heads = heads;
    a.seq_of_token = seq_of_token.data();
    a.num_keys = num_keys.data();
    a.block_tables = table_ptrs.data();
    a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    return a;
  }
};

// Mixed queries: decode rows (all keys), prefill-like rows (prefixes), lengths around the
// 32-key tile (1, 31, 32, 33, 65) and not multiples of the block size, and a verification
// step (9 causal rows of one sequence, which the kernel walks the keys for together).
Fixture make_fixture(int64_t block_size, int64_t kv_heads, int64_t head_dim, int64_t heads, DType dtype,
                     uint64_t seed) {
  Fixture f(block_size, kv_heads, head_dim, heads, dtype, {1, 33, 65, 200, 77}, seed);
  uint64_t s = seed * 1000;
  f.add_query(0, 1, ++s);
  f.add_query(1, 33, ++s);
  f.add_query(1, 31, ++s);
  f.add_query(2, 65, ++s);
  f.add_query(2, 32, ++s);
  f.add_query(3, 200, ++s);
  f.add_query(3, 1, ++s);
  f.add_query(3, 150, ++s);
  for (int32_t keys = 192; keys <= 200; ++keys) f.add_query(3, keys, ++s);
  f.add_query(4, 77, ++s);
  f.add_query(4, 64, ++s);
  return f;
}

struct Shape {
  int64_t block_size, kv_heads, head_dim, heads;
};

// head_dim 20: the portable path on a CPU without AVX-512 (the vector paths below need a
// multiple of 8 lanes there, of 16 with masks on AVX-512).
const Shape kShapes[] = {{16, 2, 64, 8}, {7, 1, 8, 3},    {5, 2, 128, 2},
                         {16, 3, 40, 6}, {32, 1, 256, 16}, {4, 1, 20, 2}};

// Tolerance: 2e-6 absolute (values in [-1, 1]; the output is a convex combination of them,
// so f32 rounding of scores, exp and sums stays near f32 epsilon).
TEST(PagedAttention, MatchesReference) {
  EachIsa each;
  for (Isa isa : each.caps)
    for (DType dtype : {DType::kF32, DType::kBF16})
      for (const Shape& s : kShapes) {
        set_active_isa(isa);
        Fixture f = make_fixture(s.block_size, s.kv_heads, s.head_dim, s.heads, dtype, 3);
        std::vector<float> out(f.q.size()), ref(f.q.size());
        paged_attention(f.args(out.data()), f.view());
        reference::paged_attention(f.args(ref.data()), f.view());
        for (size_t i = 0; i < out.size(); ++i)
          ASSERT_NEAR(out[i], ref[i], 2e-6)
              << dtype_name(dtype) << " head_dim " << s.head_dim << " index " << i << " isa " << isa_name(isa);
      }
}

// Each query row computed alone, in the mixed batch with 1 thread and with 2 threads:
// bit-identical.
TEST(PagedAttention, BatchAndThreadInvariant) {
  const int saved = num_threads();
  EachIsa each;
  for (Isa isa : each.caps)
    for (DType dtype : {DType::kF32, DType::kBF16})
      for (const Shape& s : kShapes) {
        set_active_isa(isa);
        Fixture f = make_fixture(s.block_size, s.kv_heads, s.head_dim, s.heads, dtype, 5);
        const int64_t row = s.heads * s.head_dim;
        std::vector<float> alone(f.q.size()), batch1(f.q.size()), batch2(f.q.size());
        set_num_threads(1);
        for (int64_t t = 0; t < f.tokens(); ++t) {
          PagedAttentionArgs a = f.args(alone.data() + t * row);
          a.q = f.q.data() + t * row;
          a.num_tokens = 1;
          a.seq_of_token = f.seq_of_token.data() + t;
          a.num_keys = f.num_keys.data() + t;
          paged_attention(a, f.view());
        }
        paged_attention(f.args(batch1.data()), f.view());
        set_num_threads(2);
        paged_attention(f.args(batch2.data()), f.view());
        EXPECT_TRUE(same_bits(alone.data(), batch1.data(), alone.size()))
            << dtype_name(dtype) << " " << s.head_dim << " " << isa_name(isa);
        EXPECT_TRUE(same_bits(alone.data(), batch2.data(), alone.size()))
            << dtype_name(dtype) << " " << s.head_dim << " " << isa_name(isa);
      }
  set_num_threads(saved);
}

// Sliding windows around the tile and block edges (1, block-ish, 31..33, longer than every
// row). Kernel vs reference, same 2e-6 tolerance as above; with 1 and 2 threads and each
// row alone, bit-identical (the window fixes where a row's tiles start).
TEST(PagedAttention, SlidingWindowMatchesReferenceAndIsBatchInvariant) {
  const int saved = num_threads();
  for (DType dtype : {DType::kF32, DType::kBF16})
    for (const Shape& s : kShapes)
      for (int64_t window : {1, 5, 31, 32, 33, 64, 1000}) {
        Fixture f = make_fixture(s.block_size, s.kv_heads, s.head_dim, s.heads, dtype, 11);
        const int64_t row = s.heads * s.head_dim;
        std::vector<float> out(f.q.size()), ref(f.q.size()), alone(f.q.size()), out2(f.q.size());
        PagedAttentionArgs a = f.args(out.data());
        a.window = window;
        set_num_threads(1);
        paged_attention(a, f.view());
        PagedAttentionArgs r = f.args(ref.data());
        r.window = window;
        reference::paged_attention(r, f.view());
        for (size_t i = 0; i < out.size(); ++i)
          ASSERT_NEAR(out[i], ref[i], 2e-6) << dtype_name(dtype) << " head_dim " << s.head_dim << " window "
                                            << window << " index " << i;
        for (int64_t t = 0; t < f.tokens(); ++t) {
          PagedAttentionArgs one = f.args(alone.data() + t * row);
          one.window = window;
          one.q = f.q.data() + t * row;
          one.num_tokens = 1;
          one.seq_of_token = f.seq_of_token.data() + t;
          one.num_keys = f.num_keys.data() + t;
          paged_attention(one, f.view());
        }
        set_num_threads(2);
        PagedAttentionArgs two = f.args(out2.data());
        two.window = window;
        paged_attention(two, f.view());
        EXPECT_TRUE(same_bits(alone.data(), out.data(), out.size())) << dtype_name(dtype) << " window " << window;
        EXPECT_TRUE(same_bits(out2.data(), out.data(), out.size())) << dtype_name(dtype) << " window " << window;
      }
  set_num_threads(saved);
}

// The window's meaning, checked independently of both implementations: a row with window W
// over num_keys keys equals full attention over a copy of the sequence holding only those W
// keys (positions num_keys - W .. num_keys - 1 moved to 0 .. W - 1); a window at least as
// long as the row changes no bit; keys before the window are never read (their block-table
// entries may be invalid, as if freed).
TEST(PagedAttention, SlidingWindowSeesExactlyTheLastWKeys) {
  const int64_t block_size = 4, kv_heads = 1, head_dim = 16, heads = 2, len = 23, window = 6;
  Fixture f(block_size, kv_heads, head_dim, heads, DType::kF32, {len}, 21);
  f.add_query(0, len, 1);
  f.add_query(0, 9, 2);
  f.add_query(0, 3, 3);  // shorter than the window: sees everything
  std::vector<float> windowed(f.q.size()), full(f.q.size());
  PagedAttentionArgs a = f.args(windowed.data());
  a.window = window;
  paged_attention(a, f.view());
  paged_attention(f.args(full.data()), f.view());
  const int64_t row = heads * head_dim;
  EXPECT_TRUE(same_bits(windowed.data() + 2 * row, full.data() + 2 * row, static_cast<size_t>(row)));
  PagedAttentionArgs wide = f.args(full.data());
  wide.window = len;
  std::vector<float> wide_out(f.q.size());
  wide.out = wide_out.data();
  paged_attention(wide, f.view());
  EXPECT_TRUE(same_bits(wide_out.data(), full.data(), full.size()));

  for (int64_t t = 0; t < 2; ++t) {
    const int64_t n = f.num_keys[t], first = n - window;
    // A one-sequence pool holding keys first .. n-1 at positions 0 .. W-1.
    const int64_t kv_row = kv_heads * head_dim;
    const int32_t* table = f.tables[0].data();
    const std::vector<int32_t> small_table = {0, 1};  // W = 6 keys in two blocks of 4
    std::vector<float> kp(static_cast<size_t>(8 * kv_row), NAN), vp(kp.size(), NAN);
    KvLayerView small{kp.data(), vp.data(), DType::kF32, 2, block_size, kv_heads, head_dim};
    for (int64_t j = 0; j < window; ++j) {
      const int64_t pos = first + j;
      const int64_t slot = int64_t{table[pos / block_size]} * block_size + pos % block_size;
      for (int64_t h = 0; h < kv_heads; ++h)
        for (int64_t e = 0; e < head_dim; ++e) {
          kp[key_index(small, j, h, e)] = f.k_pool[key_index(f.view(), slot, h, e)];
          vp[value_index(small, j, h, e)] = f.v_pool[value_index(f.view(), slot, h, e)];
        }
    }
    std::vector<float> expect(static_cast<size_t>(row));
    const int32_t seq = 0, keys = static_cast<int32_t>(window);
    const int32_t* tables[1] = {small_table.data()};
    PagedAttentionArgs direct = f.args(expect.data());
    direct.q = f.q.data() + t * row;
    direct.num_tokens = 1;
    direct.seq_of_token = &seq;
    direct.num_keys = &keys;
    direct.block_tables = tables;
    reference::paged_attention(direct, small);
    for (int64_t i = 0; i < row; ++i) ASSERT_NEAR(windowed[t * row + i], expect[i], 2e-6) << "row " << t;
  }

  // Blocks wholly before every row's window: invalid ids must not be read or rejected.
  f.seq_of_token = {0};
  f.num_keys = {static_cast<int32_t>(len)};
  f.q.resize(static_cast<size_t>(row));
  f.tables[0][0] = -1;
  f.tables[0][1] = static_cast<int32_t>(f.num_blocks + 5);
  f.table_ptrs[0] = f.tables[0].data();
  std::vector<float> after(static_cast<size_t>(row));
  PagedAttentionArgs freed = f.args(after.data());
  freed.window = window;  // first visible position 17: block 4
  EXPECT_NO_THROW(paged_attention(freed, f.view()));
  EXPECT_TRUE(same_bits(after.data(), windowed.data(), static_cast<size_t>(row)));
  freed.window = 0;  // full attention reads them: rejected
  EXPECT_THROW(paged_attention(freed, f.view()), Error);
}

TEST(WriteKv, StoresRoundedBf16AndExactF32) {
  const int64_t kv_heads = 2, head_dim = 24, row = kv_heads * head_dim;
  const auto k = random_floats(3 * row, 1, -50.0f, 50.0f);
  const auto v = random_floats(3 * row, 2, -50.0f, 50.0f);
  const int64_t slots[3] = {5, 0, 2};
  std::vector<float> kf(static_cast<size_t>(8 * row)), vf(kf.size());
  std::vector<uint16_t> kb(kf.size()), vb(kf.size());
  KvLayerView view{kf.data(), vf.data(), DType::kF32, 2, 4, kv_heads, head_dim};
  write_kv(k.data(), v.data(), slots, 3, view);
  KvLayerView view16{kb.data(), vb.data(), DType::kBF16, 2, 4, kv_heads, head_dim};
  write_kv(k.data(), v.data(), slots, 3, view16);
  // V rows as given; K blocks of 4 positions transposed: [kv_heads, head_dim, 4].
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t i = 0; i < row; ++i) {
      const int64_t head = i / head_dim, e = i % head_dim, block = slots[t] / 4, offset = slots[t] % 4;
      const size_t v_dst = static_cast<size_t>(slots[t] * row + i), src = static_cast<size_t>(t * row + i);
      const size_t k_dst = static_cast<size_t>(((block * kv_heads + head) * head_dim + e) * 4 + offset);
      ASSERT_EQ(key_index(view, slots[t], head, e), static_cast<int64_t>(k_dst));
      ASSERT_EQ(value_index(view, slots[t], head, e), static_cast<int64_t>(v_dst));
      ASSERT_EQ(kf[k_dst], k[src]);
      ASSERT_EQ(vf[v_dst], v[src]);
      ASSERT_EQ(kb[k_dst], float_to_bf16(k[src]));
      ASSERT_EQ(vb[v_dst], float_to_bf16(v[src]));
    }
  const int64_t bad = 8;
  EXPECT_THROW(write_kv(k.data(), v.data(), &bad, 1, view), Error);
}

TEST(PagedAttention, RejectsBadInputs) {
  Fixture f = make_fixture(16, 2, 64, 8, DType::kF32, 9);
  std::vector<float> out(f.q.size());
  auto a = f.args(out.data());
  f.num_keys[0] = 0;
  EXPECT_THROW(paged_attention(a, f.view()), Error);
  f.num_keys[0] = 1;
  f.tables[0][0] = static_cast<int32_t>(f.num_blocks);  // block id past the pool
  EXPECT_THROW(paged_attention(a, f.view()), Error);
  f.tables[0][0] = 0;
  a.num_heads = 7;  // not a multiple of 2 KV heads
  EXPECT_THROW(paged_attention(a, f.view()), Error);
}

}  // namespace
}  // namespace dspark
