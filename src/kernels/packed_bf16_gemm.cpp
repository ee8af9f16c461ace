#include "kernels/packed_bf16_gemm.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "core/dtype.h"

#ifdef __AVX512BF16__
#include <immintrin.h>
#endif
#if defined(__AMX_TILE__) && defined(__AMX_BF16__)
#define DSPARK_HAVE_AMX 1
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace dspark {
namespace {

constexpr int64_t kBlock = 16;        // outputs per vector / per AMX tile column block
constexpr int64_t kGroupBlocks = 4;   // blocks per group: 64 outputs
constexpr int64_t kGroup = kBlock * kGroupBlocks;
constexpr int64_t kChunkPairs = 16;   // k pairs per chunk (one AMX B tile: 16 rows x 64 bytes)
constexpr int64_t kChunk = 2 * kChunkPairs;                // k columns per chunk
constexpr int64_t kTileElems = kChunkPairs * kBlock * 2;   // bf16 per (chunk, block) tile: 512
constexpr int kMaxTileRows = 6;       // AVX-512: 6 rows x 4 blocks = 24 accumulators (of 32 zmm)
// Below this many multiply-adds a call runs on the calling thread: waking the OpenMP team
// costs more than it saves.
constexpr int64_t kParallelMinMacs = int64_t{1} << 17;

int64_t blocks_in_group(int64_t group, int64_t out) {
  const int64_t remaining = out - group * kGroup;
  return std::min<int64_t>(kGroupBlocks, (remaining + kBlock - 1) / kBlock);
}

#ifdef __AVX512F__
__mmask16 valid_lanes(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1u);
}
#endif

#ifdef __AVX512BF16__

// kRows x kBlocks outputs of one group: x [kRows, ldx] bf16; w: the group's packed tiles
// ([chunks][kBlocks][16 kp][16][2]); y row stride ldy; the last block stores last_mask lanes.
template <int kRows, int kBlocks>
void avx512_tile(const uint16_t* x, int64_t ldx, const uint16_t* w, int64_t num_chunks, const float* bias,
                 float* y, int64_t ldy, __mmask16 last_mask) {
  __m512 acc[kRows][kBlocks];
  for (int r = 0; r < kRows; ++r)
    for (int b = 0; b < kBlocks; ++b) acc[r][b] = _mm512_setzero_ps();
  for (int64_t ch = 0; ch < num_chunks; ++ch) {
    const uint16_t* wc = w + ch * kBlocks * kTileElems;
    for (int64_t i = 0; i < kChunkPairs; ++i) {
      __m512bh wv[kBlocks];
      for (int b = 0; b < kBlocks; ++b)
        wv[b] = (__m512bh)_mm512_loadu_si512(wc + b * kTileElems + i * 2 * kBlock);
      for (int r = 0; r < kRows; ++r) {
        int32_t pair;
        std::memcpy(&pair, x + r * ldx + ch * kChunk + 2 * i, sizeof(pair));
        const __m512bh xv = (__m512bh)_mm512_set1_epi32(pair);
        for (int b = 0; b < kBlocks; ++b) acc[r][b] = _mm512_dpbf16_ps(acc[r][b], xv, wv[b]);
      }
    }
  }
  for (int b = 0; b < kBlocks; ++b) {
    const __m512 bv = _mm512_load_ps(bias + b * kBlock);
    const __mmask16 m = b == kBlocks - 1 ? last_mask : static_cast<__mmask16>(0xffff);
    for (int r = 0; r < kRows; ++r)
      _mm512_mask_storeu_ps(y + r * ldy + b * kBlock, m, _mm512_add_ps(acc[r][b], bv));
  }
}

using Avx512TileFn = void (*)(const uint16_t*, int64_t, const uint16_t*, int64_t, const float*, float*,
                              int64_t, __mmask16);

template <int kRows>
Avx512TileFn avx512_tile_for_blocks(int64_t blocks) {
  switch (blocks) {
    case 1: return avx512_tile<kRows, 1>;
    case 2: return avx512_tile<kRows, 2>;
    case 3: return avx512_tile<kRows, 3>;
    default: return avx512_tile<kRows, 4>;
  }
}

Avx512TileFn avx512_tile_fn(int64_t rows, int64_t blocks) {
  switch (rows) {
    case 1: return avx512_tile_for_blocks<1>(blocks);
    case 2: return avx512_tile_for_blocks<2>(blocks);
    case 3: return avx512_tile_for_blocks<3>(blocks);
    case 4: return avx512_tile_for_blocks<4>(blocks);
    case 5: return avx512_tile_for_blocks<5>(blocks);
    default: return avx512_tile_for_blocks<6>(blocks);
  }
}

#endif  // __AVX512BF16__

#ifdef DSPARK_HAVE_AMX

// Palette 1, eight tiles of 16 rows x 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

void load_tile_config() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.colsb[t] = 64;
    config.rows[t] = 16;
  }
  _tile_loadconfig(&config);
}

// One x row block (16 rows, ldx) times kBlocks (1..4) column blocks of a group (w: first
// block's tile of chunk 0; chunk_stride: bf16 between chunks). Tiles: 0-3 accumulators,
// 4 x, 5-7 weights (5 reused for the fourth block). c: [16, 64] f32.
template <int kBlocks>
void amx_one_row_block(const uint16_t* x, int64_t ldx, const uint16_t* w, int64_t chunk_stride,
                       int64_t num_chunks, float* c) {
  _tile_zero(0);
  if constexpr (kBlocks > 1) _tile_zero(1);
  if constexpr (kBlocks > 2) _tile_zero(2);
  if constexpr (kBlocks > 3) _tile_zero(3);
  const int64_t x_stride = ldx * static_cast<int64_t>(sizeof(uint16_t));
  constexpr int64_t kTileStride = 2 * kBlock * sizeof(uint16_t);  // 64 bytes per kp row
  for (int64_t ch = 0; ch < num_chunks; ++ch) {
    const uint16_t* wc = w + ch * chunk_stride;
    _tile_loadd(4, x + ch * kChunk, x_stride);
    _tile_loadd(5, wc, kTileStride);
    if constexpr (kBlocks > 1) _tile_loadd(6, wc + kTileElems, kTileStride);
    if constexpr (kBlocks > 2) _tile_loadd(7, wc + 2 * kTileElems, kTileStride);
    _tile_dpbf16ps(0, 4, 5);
    if constexpr (kBlocks > 1) _tile_dpbf16ps(1, 4, 6);
    if constexpr (kBlocks > 2) _tile_dpbf16ps(2, 4, 7);
    if constexpr (kBlocks > 3) {
      _tile_loadd(5, wc + 3 * kTileElems, kTileStride);
      _tile_dpbf16ps(3, 4, 5);
    }
  }
  constexpr int64_t kRowBytes = kGroup * sizeof(float);
  _tile_stored(0, c, kRowBytes);
  if constexpr (kBlocks > 1) _tile_stored(1, c + kBlock, kRowBytes);
  if constexpr (kBlocks > 2) _tile_stored(2, c + 2 * kBlock, kRowBytes);
  if constexpr (kBlocks > 3) _tile_stored(3, c + 3 * kBlock, kRowBytes);
}

// Two x row blocks (32 rows) times kBlocks (1..2) column blocks. Tiles: accumulator of
// (row block rb, block b) is 2 rb + b, x 4-5, weights 6-7. c: [32, 64] f32.
template <int kBlocks>
void amx_two_row_blocks(const uint16_t* x, int64_t ldx, const uint16_t* w, int64_t chunk_stride,
                        int64_t num_chunks, float* c) {
  _tile_zero(0);
  _tile_zero(2);
  if constexpr (kBlocks > 1) {
    _tile_zero(1);
    _tile_zero(3);
  }
  const int64_t x_stride = ldx * static_cast<int64_t>(sizeof(uint16_t));
  constexpr int64_t kTileStride = 2 * kBlock * sizeof(uint16_t);
  for (int64_t ch = 0; ch < num_chunks; ++ch) {
    const uint16_t* wc = w + ch * chunk_stride;
    _tile_loadd(4, x + ch * kChunk, x_stride);
    _tile_loadd(5, x + 16 * ldx + ch * kChunk, x_stride);
    _tile_loadd(6, wc, kTileStride);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(2, 5, 6);
    if constexpr (kBlocks > 1) {
      _tile_loadd(7, wc + kTileElems, kTileStride);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  constexpr int64_t kRowBytes = kGroup * sizeof(float);
  _tile_stored(0, c, kRowBytes);
  _tile_stored(2, c + 16 * kGroup, kRowBytes);
  if constexpr (kBlocks > 1) {
    _tile_stored(1, c + kBlock, kRowBytes);
    _tile_stored(3, c + 16 * kGroup + kBlock, kRowBytes);
  }
}

using AmxFn = void (*)(const uint16_t*, int64_t, const uint16_t*, int64_t, int64_t, float*);

AmxFn amx_one_row_block_fn(int64_t blocks) {
  switch (blocks) {
    case 1: return amx_one_row_block<1>;
    case 2: return amx_one_row_block<2>;
    case 3: return amx_one_row_block<3>;
    default: return amx_one_row_block<4>;
  }
}

#endif  // DSPARK_HAVE_AMX

}  // namespace

bool amx_available() {
#ifdef DSPARK_HAVE_AMX
  // Linux hands out the AMX tile-data state only to processes that ask for it; the request
  // fails where the CPU or the kernel lacks AMX.
  static const bool available = [] {
    constexpr long kArchReqXcompPerm = 0x1023;
    constexpr long kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return available;
#else
  return false;
#endif
}

PackedBf16Gemm::PackedBf16Gemm(const float* weight, int64_t out_features, int64_t in_features,
                               std::span<const float> bias, PackedIsa isa)
    : out_(out_features),
      in_(in_features),
      padded_in_((in_features + kChunk - 1) / kChunk * kChunk),
      num_groups_((out_features + kGroup - 1) / kGroup),
      isa_(isa == PackedIsa::kBest ? (amx_available() ? PackedIsa::kAmx : PackedIsa::kAvx512) : isa) {
  DSPARK_CHECK(out_ > 0 && in_ > 0, "PackedBf16Gemm: bad shape [{}, {}]", out_, in_);
  DSPARK_CHECK(bias.empty() || static_cast<int64_t>(bias.size()) == out_,
               "PackedBf16Gemm: bias has {} values, expected {}", bias.size(), out_);
  DSPARK_CHECK(isa_ != PackedIsa::kAmx || amx_available(), "PackedBf16Gemm: AMX requested but not available");
  const int64_t num_chunks = padded_in_ / kChunk;
  int64_t total = 0;  // bf16 elements
  for (int64_t g = 0; g < num_groups_; ++g) total += num_chunks * blocks_in_group(g, out_) * kTileElems;
  packed_ = AlignedBuffer(static_cast<size_t>(total) * sizeof(uint16_t));
  uint16_t* dst = packed_.as<uint16_t>();  // zero-initialised: padding outputs/columns stay 0
  for (int64_t g = 0; g < num_groups_; ++g) {
    const int64_t blocks = blocks_in_group(g, out_);
    for (int64_t ch = 0; ch < num_chunks; ++ch)
      for (int64_t b = 0; b < blocks; ++b)
        for (int64_t i = 0; i < kChunkPairs; ++i)
          for (int64_t lane = 0; lane < kBlock; ++lane) {
            const int64_t n = g * kGroup + b * kBlock + lane;
            for (int64_t e = 0; e < 2; ++e) {
              const int64_t k = ch * kChunk + 2 * i + e;
              if (n < out_ && k < in_)
                dst[((ch * blocks + b) * kChunkPairs + i) * 2 * kBlock + lane * 2 + e] =
                    float_to_bf16(weight[n * in_ + k]);
            }
          }
    dst += num_chunks * blocks * kTileElems;
  }
  bias_ = AlignedBuffer(static_cast<size_t>(num_groups_ * kGroup) * sizeof(float));
  if (!bias.empty()) std::memcpy(bias_.data(), bias.data(), bias.size() * sizeof(float));
}

void PackedBf16Gemm::multiply(const uint16_t* x, float* y, int64_t num_rows) const {
  if (isa_ == PackedIsa::kAmx) multiply_amx(x, y, num_rows);
  else multiply_avx512(x, y, num_rows);
}

void PackedBf16Gemm::multiply_avx512(const uint16_t* x, float* y, int64_t num_rows) const {
  const int64_t num_chunks = padded_in_ / kChunk;
  const int64_t group_elems = num_chunks * kGroupBlocks * kTileElems;  // of every full group
  const uint16_t* packed = packed_.as<uint16_t>();
  const float* bias = bias_.as<float>();
  const int64_t out = out_;
  const int64_t ldx = padded_in_;
  const int64_t num_groups = num_groups_;
  const bool parallel = num_rows * out_ * in_ >= kParallelMinMacs;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t g = 0; g < num_groups; ++g) {
    const int64_t blocks = blocks_in_group(g, out);
    const uint16_t* w = packed + g * group_elems;
    const int64_t col = g * kGroup;
    const int64_t valid_last = std::min(kBlock, out - col - (blocks - 1) * kBlock);  // 1..16
#ifdef __AVX512BF16__
    // Rows in tiles of up to kMaxTileRows; the group's weights (64 x in bf16) stay in L2
    // across the row tiles, so W is read from memory once per call.
    for (int64_t r = 0; r < num_rows; r += kMaxTileRows) {
      const int64_t rows = std::min<int64_t>(kMaxTileRows, num_rows - r);
      avx512_tile_fn(rows, blocks)(x + r * ldx, ldx, w, num_chunks, bias + col, y + r * out + col, out,
                                   valid_lanes(valid_last));
    }
#else
    // Portable path with the same per-output chain (products of bf16 values are exact in f32).
    for (int64_t r = 0; r < num_rows; ++r)
      for (int64_t b = 0; b < blocks; ++b)
        for (int64_t lane = 0; lane < (b == blocks - 1 ? valid_last : kBlock); ++lane) {
          float acc = 0.0f;
          for (int64_t ch = 0; ch < num_chunks; ++ch)
            for (int64_t i = 0; i < kChunkPairs; ++i) {
              const uint16_t* wp = w + ((ch * blocks + b) * kChunkPairs + i) * 2 * kBlock + lane * 2;
              const uint16_t* xp = x + r * ldx + ch * kChunk + 2 * i;
              acc += bf16_to_float(xp[1]) * bf16_to_float(wp[1]);
              acc += bf16_to_float(xp[0]) * bf16_to_float(wp[0]);
            }
          y[r * out + col + b * kBlock + lane] = acc + bias[col + b * kBlock + lane];
        }
#endif
  }
}

void PackedBf16Gemm::multiply_amx(const uint16_t* x, float* y, int64_t num_rows) const {
#ifdef DSPARK_HAVE_AMX
  const int64_t num_chunks = padded_in_ / kChunk;
  const int64_t group_elems = num_chunks * kGroupBlocks * kTileElems;
  const uint16_t* packed = packed_.as<uint16_t>();
  const float* bias = bias_.as<float>();
  const int64_t out = out_;
  const int64_t ldx = padded_in_;
  const int64_t num_groups = num_groups_;
  const bool parallel = num_rows * out_ * in_ >= kParallelMinMacs;
#pragma omp parallel if (parallel)
  {
    load_tile_config();  // tile configuration is per thread
    alignas(64) float c[32 * kGroup];  // [32 rows, 64 outputs] of one call
#pragma omp for schedule(static)
    for (int64_t g = 0; g < num_groups; ++g) {
      const int64_t blocks = blocks_in_group(g, out);
      const uint16_t* w = packed + g * group_elems;
      const int64_t chunk_stride = blocks * kTileElems;
      // Writes rows [r0, r0 + rows) x blocks [b0, b0 + count) from c (+ bias).
      auto store = [&](int64_t r0, int64_t rows, int64_t b0, int64_t count) {
        for (int64_t b = b0; b < b0 + count; ++b) {
          const int64_t n0 = g * kGroup + b * kBlock;
          const __mmask16 m = valid_lanes(out - n0);
          const __m512 bv = _mm512_load_ps(bias + n0);
          for (int64_t r = 0; r < rows; ++r)
            _mm512_mask_storeu_ps(y + (r0 + r) * out + n0, m, _mm512_add_ps(_mm512_load_ps(c + r * kGroup + b * kBlock), bv));
        }
      };
      int64_t r0 = 0;
      // Pairs of 16-row blocks share each weight tile load; a last single block (or a
      // call of <= 16 rows, as in decoding) streams the group's tiles in order.
      for (; num_rows - r0 > 16; r0 += 32) {
        const int64_t rows = std::min<int64_t>(32, num_rows - r0);
        for (int64_t b0 = 0; b0 < blocks; b0 += 2) {
          const int64_t count = std::min<int64_t>(2, blocks - b0);
          (count == 2 ? amx_two_row_blocks<2> : amx_two_row_blocks<1>)(
              x + r0 * ldx, ldx, w + b0 * kTileElems, chunk_stride, num_chunks, c + b0 * kBlock);
        }
        store(r0, rows, 0, blocks);
      }
      if (r0 < num_rows) {
        amx_one_row_block_fn(blocks)(x + r0 * ldx, ldx, w, chunk_stride, num_chunks, c);
        store(r0, num_rows - r0, 0, blocks);
      }
    }
    _tile_release();
  }
#else
  DSPARK_FAIL("PackedBf16Gemm: built without AMX support");
#endif
}

}  // namespace dspark
