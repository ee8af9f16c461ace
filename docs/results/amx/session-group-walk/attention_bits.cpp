// Prints a hash of paged_attention outputs over many configurations.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>
#include <numeric>
#include <algorithm>
#include "kernels/attention.h"
#include "core/dtype.h"
using namespace dspark;
int main() {
  uint64_t total = 1469598103934665603ull;
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> U(-1.5f, 1.5f);
  for (int64_t bs : {16, 32, 8, 12, 48})
  for (int dt = 0; dt < 2; ++dt)
  for (int64_t hd : {64, 32, 128, 80})
  for (int64_t tokens : {1, 2, 5, 9, 17, 33})
  for (int64_t len : {1, 7, 31, 128, 300})
  for (int64_t window : {0, 5, 40}) {
    if (tokens > len) continue;
    const int64_t kvh = 2, heads = 4;
    KvLayerView kv; kv.dtype = dt ? DType::kBF16 : DType::kF32; kv.block_size = bs; kv.num_kv_heads = kvh; kv.head_dim = hd;
    const int64_t nb = (len + bs - 1) / bs + 2; kv.num_blocks = nb;
    const size_t pool = nb * bs * kvh * hd; const size_t el = dt ? 2 : 4;
    std::vector<char> K(pool * el), V(pool * el); kv.k = K.data(); kv.v = V.data();
    std::vector<int32_t> table(nb); std::iota(table.begin(), table.end(), 0); std::shuffle(table.begin(), table.end(), gen);
    std::vector<float> k(len * kvh * hd), v(len * kvh * hd); for (auto& x : k) x = U(gen); for (auto& x : v) x = U(gen);
    std::vector<int64_t> slots(len); for (int64_t p = 0; p < len; ++p) slots[p] = int64_t{table[p / bs]} * bs + p % bs;
    write_kv(k.data(), v.data(), slots.data(), len, kv);
    std::vector<float> q(tokens * heads * hd), out(tokens * heads * hd); for (auto& x : q) x = U(gen);
    std::vector<int32_t> seq(tokens, 0), nk(tokens); for (int64_t t = 0; t < tokens; ++t) nk[t] = len - tokens + 1 + t;
    const int32_t* tp = table.data();
    PagedAttentionArgs a; a.q = q.data(); a.out = out.data(); a.num_tokens = tokens; a.num_heads = heads;
    a.seq_of_token = seq.data(); a.num_keys = nk.data(); a.block_tables = &tp; a.scale = 0.125f; a.window = window;
    paged_attention(a, kv);
    uint64_t h = 1469598103934665603ull; for (float f : out) { uint32_t u; std::memcpy(&u, &f, 4); h = (h ^ u) * 1099511628211ull; total = (total ^ u) * 1099511628211ull; }
    if (getenv("PER")) std::printf("bs %ld dt %d hd %ld tokens %ld len %ld window %ld %016llx\n", bs, dt, hd, tokens, len, window, (unsigned long long)h);
  }
  std::printf("%016llx\n", (unsigned long long)total);
}
