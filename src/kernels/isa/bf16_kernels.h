// The bf16-weight matmul kernels of each ISA level (internal to kernels/).
//
// Packed layout (PackedBf16Gemm packs it): outputs in groups of 64 (four 16-output blocks);
// within a group, k runs in chunks of 32 columns and each (chunk, block) is one contiguous
// 1 KB tile of 16 k-pairs x 16 outputs x 2: [groups][chunks][blocks][16][16][2]. That is the
// B operand of AMX tdpbf16ps as is, 16 consecutive vdpbf16ps operands, and, widened
// (low half of each 32-bit pair = even k, high half = odd k), 32 f32 FMA operands.
//
// Every kernel computes y[M, out] = bf16(x)[M, in] · Wᵀ + bias with one fixed f32 reduction
// order per output, so row r never depends on M, on the row tiling or on the thread count:
//  - fma256 / fma512: one f32 fused multiply-add chain over k = 0, 1, 2, ... then + bias.
//  - dpbf16: one vdpbf16ps chain over k-pairs in order, then + bias.
//  - amx: one tile accumulator updated by tdpbf16ps over the 32-column chunks, then + bias.
//  - fp16: bf16 x and W, exact in fp16 after a power of two per row of x and per output
//    (the weights stored so, in the same layout); one vfmadd231ph chain per (output, k
//    parity) lane over 2 chunks at a time, in fp16, each such sum added to the lane's f32 sum
//    in order; then even + odd lanes, both powers of two undone, + bias.
// Each lives in its own translation unit compiled for its ISA only; call one only when
// isa_allowed() says its level may run.
#pragma once

#include <cstdint>

namespace dspark::kernels {

inline constexpr int64_t kBf16Block = 16;                     // outputs per block
inline constexpr int64_t kBf16GroupBlocks = 4;                // blocks per group
inline constexpr int64_t kBf16Group = kBf16Block * kBf16GroupBlocks;  // 64 outputs
inline constexpr int64_t kBf16ChunkPairs = 16;                // k pairs per chunk
inline constexpr int64_t kBf16Chunk = 2 * kBf16ChunkPairs;    // 32 k columns per chunk
inline constexpr int64_t kBf16TileElems = kBf16ChunkPairs * kBf16Block * 2;  // 512 bf16
// Below this many multiply-adds a call runs on the calling thread: waking the OpenMP team
// costs more than it saves.
inline constexpr int64_t kParallelMinMacs = int64_t{1} << 17;

// Whether an FMA tile (gemm_fma256 / gemm_fma512, whose packed weights are bf16 or f32) of
// `rows` rows asks for its weights ahead (_mm_prefetch): weights stream from memory once per
// call, so several rows always do. One row of bf16 weights does too, f32 does not: measured
// on Zen 5, bf16 decoding 12-40% faster than with the hardware prefetcher alone, f32 about
// 8% slower (the dpbf16 kernel's one row gains nothing either, and does not ask). static:
// each ISA's translation unit compiles its own copy.
static constexpr bool fma_tile_prefetches(int rows, int64_t weight_bytes) { return rows > 1 || weight_bytes == 2; }

// static: each ISA's translation unit keeps its own copy (no cross-ISA inline merging).
static inline int64_t bf16_blocks_in_group(int64_t group, int64_t out) {
  const int64_t remaining = out - group * kBf16Group;
  return remaining >= kBf16Group ? kBf16GroupBlocks : (remaining + kBf16Block - 1) / kBf16Block;
}

// A packed weight matrix as the kernels see it.
struct PackedBf16View {
  const uint16_t* tiles;  // [groups][padded_in / 32][blocks <= 4][16][16][2] bf16
  const float* bias;      // [num_groups * 64] f32, zero beyond out (and when no bias)
  // fp16 kernel only (else null): [num_groups * 64] f32, output n's weights are stored
  // scaled by 2^-out_exponent[n] (an integer; 0 beyond out).
  const float* out_exponent;
  int64_t out;
  int64_t in;
  int64_t padded_in;      // in rounded up to 32
  int64_t num_groups;
};

// x: [rows, in] f32 (rounded to bf16 inside); y: [rows, out] f32.
// scratch (f32 kernels): [rows, padded_in] f32, zero in columns >= in.
void bf16_gemm_fma256(const PackedBf16View& w, const float* x, float* scratch, float* y, int64_t rows);
void bf16_gemm_fma512(const PackedBf16View& w, const float* x, float* scratch, float* y, int64_t rows);
// scratch (bf16 kernels): [round_up(rows, 16), padded_in] bf16, zero in columns >= in.
void bf16_gemm_dpbf16(const PackedBf16View& w, const float* x, uint16_t* scratch, float* y, int64_t rows);
void bf16_gemm_amx(const PackedBf16View& w, const float* x, uint16_t* scratch, float* y, int64_t rows);
// scratch: [rows, padded_in] fp16; row_exponent: [rows] f32 (written here). The tiles hold
// fp16 values.
void bf16_gemm_fp16(const PackedBf16View& w, const float* x, uint16_t* scratch, float* row_exponent, float* y,
                    int64_t rows);

}  // namespace dspark::kernels
