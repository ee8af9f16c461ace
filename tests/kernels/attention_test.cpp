#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "core/check.h"
#include "core/rng.h"
#include "core/threads.h"
#include "kernels/kernel_test_util.h"

namespace dspark {
namespace {

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
// 32-key tile (1, 31, 32, 33, 65) and not multiples of the block size.
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
  f.add_query(4, 77, ++s);
  f.add_query(4, 64, ++s);
  return f;
}

struct Shape {
  int64_t block_size, kv_heads, head_dim, heads;
};

const Shape kShapes[] = {{16, 2, 64, 8}, {7, 1, 8, 3}, {5, 2, 128, 2}, {16, 3, 40, 6}, {32, 1, 256, 16}};

// Tolerance: 2e-6 absolute (values in [-1, 1]; the output is a convex combination of them,
// so f32 rounding of scores, exp and sums stays near f32 epsilon).
TEST(PagedAttention, MatchesReference) {
  for (DType dtype : {DType::kF32, DType::kBF16})
    for (const Shape& s : kShapes) {
      Fixture f = make_fixture(s.block_size, s.kv_heads, s.head_dim, s.heads, dtype, 3);
      std::vector<float> out(f.q.size()), ref(f.q.size());
      paged_attention(f.args(out.data()), f.view());
      reference::paged_attention(f.args(ref.data()), f.view());
      for (size_t i = 0; i < out.size(); ++i)
        ASSERT_NEAR(out[i], ref[i], 2e-6) << dtype_name(dtype) << " head_dim " << s.head_dim << " index " << i;
    }
}

// Each query row computed alone, in the mixed batch with 1 thread and with 2 threads:
// bit-identical.
TEST(PagedAttention, BatchAndThreadInvariant) {
  const int saved = num_threads();
  for (DType dtype : {DType::kF32, DType::kBF16})
    for (const Shape& s : kShapes) {
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
      EXPECT_TRUE(same_bits(alone.data(), batch1.data(), alone.size())) << dtype_name(dtype) << " " << s.head_dim;
      EXPECT_TRUE(same_bits(alone.data(), batch2.data(), alone.size())) << dtype_name(dtype) << " " << s.head_dim;
    }
  set_num_threads(saved);
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
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t i = 0; i < row; ++i) {
      const size_t dst = static_cast<size_t>(slots[t] * row + i), src = static_cast<size_t>(t * row + i);
      ASSERT_EQ(kf[dst], k[src]);
      ASSERT_EQ(vf[dst], v[src]);
      ASSERT_EQ(kb[dst], float_to_bf16(k[src]));
      ASSERT_EQ(vb[dst], float_to_bf16(v[src]));
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
