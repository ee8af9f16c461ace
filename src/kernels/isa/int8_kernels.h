// The int8-weight matmul kernels (internal to kernels/).
//
// Weights: symmetric int8 per output row and 32-column block of k, q = round(w / s) in
// [-127, 127] with s = max|w| / 127, stored offset by 128 as u8 (q + 128): the unsigned
// operand of vpdpbusd. 4-bit weights: q in [-7, 7] with s = max|w| / 7, stored as the nibble
// q + 8, two to a byte; the VNNI kernel widens a nibble n to the byte 16 n = 16 q + 128 (a
// mask, and a shift for the low nibble), the 8-bit kernels' offset operand for the weight 16 q,
// and the AVX-VNNI and AVX2 kernels sum n q_x and multiply by 16 (the same integer u); the
// scale is used as s / 16 (exact), so every later step is the 8-bit one. A 4-bit scale is an
// f16 value (the quantizer rounds it so) and is packed as f16: a fifth of a 4-bit weight's
// bytes would otherwise be its scale. Activations: int8 per row and 32-column block, q = round(x / t) with
// t = max|x| / 127, quantized on the fly by the kernel.
//
// Packed layout: outputs in groups of 32 (two 16-output blocks); a group is one run of
// chunk records, one per 32-column block of k: [groups][chunks]{u8 [2 blocks][8][16][4],
// f32 scales [2 blocks][16]}. Within a block, 8 vectors of 16 lanes x 4 consecutive k.
// 4-bit blocks hold 4 vectors: byte i of vector p carries byte i of 8-bit vector 2p in its
// low nibble and of vector 2p + 1 in its high nibble; their scales are f16 [2 blocks][16].
//
// Per output, with u = Σ_k (q_w + 128) q_x over a chunk (exact in int32) and
// c = 128 t Σ_k q_x (the offset's share, one f32 per row and chunk):
//   y = ((u t - c) s)  accumulated over chunks in order by f32 FMA, then + bias.
// Integer dot products are exact, so the order is fixed by the chunk loop alone: row r
// never depends on M, the tiling or the thread count.
#pragma once

#include <cstdint>

namespace dspark::kernels {

inline constexpr int64_t kInt8Block = 16;               // outputs per block
inline constexpr int64_t kInt8GroupBlocks = 2;
inline constexpr int64_t kInt8Group = kInt8Block * kInt8GroupBlocks;  // 32 outputs
inline constexpr int64_t kInt8Chunk = 32;               // k per quantization block
inline constexpr int64_t kInt8BlockBytes = kInt8Block * kInt8Chunk;   // 512 u8 per (chunk, block)
// Weight bytes of one (chunk, block) for `bits`-bit weights (8 or 4).
constexpr int64_t int8_block_bytes(int bits) { return kInt8BlockBytes * bits / 8; }
// Steps of k (4 k each) whose weights one 64-byte load of a block holds: a 4-bit load
// widens to two. static: each ISA's translation unit compiles its own copy.
static constexpr int int8_steps_per_load(int bits) { return bits == 8 ? 1 : 2; }
// Bytes of one block's scales in a chunk record: f32, or f16 for 4-bit weights.
constexpr int64_t int8_scale_bytes(int bits) { return kInt8Block * (bits == 8 ? 4 : 2); }
// Bytes of one chunk record of a group of `blocks` blocks: weights then scales.
constexpr int64_t int8_record_bytes(int bits, int64_t blocks) {
  return blocks * (int8_block_bytes(bits) + int8_scale_bytes(bits));
}

// A packed int8 weight matrix as the kernels see it.
struct PackedInt8View {
  const uint8_t* records;  // [groups][chunks] chunk records (a last partial group has 1 block)
  const float* bias;       // [num_groups * 32] f32, zero beyond out
  int64_t out;
  int64_t in;
  int64_t padded_in;       // in rounded up to 32
  int64_t num_groups;
  int bits;                // 8 or 4
};

// How many chunk records ahead of the one in use a tile of `rows` rows asks for weights
// (_mm_prefetch): the weights stream from memory once per product, so the load must start
// early enough to overlap the arithmetic. A one-row tile (decoding) has a ninth of a 9-row
// tile's arithmetic per chunk, so it asks twice as far ahead (16 measured better than 8 and
// 32): on Zen 5 (no AMX), int8 decoding 2-15% faster with vnni512 and 15-40% with avxvnni
// and avx2 than with the hardware prefetcher alone, which the kernels relied on at one row.
// static: each ISA's translation unit compiles its own copy (kernels/isa/ objects share no
// inline symbols).
static constexpr int64_t int8_prefetch_chunks(int rows) { return rows == 1 ? 16 : 8; }

// Below this many multiply-adds a product stays on the calling thread.
inline constexpr int64_t kInt8ParallelMinMacs = int64_t{1} << 17;

// Group g of a packed matrix: its first output, its block count (2, or 1 for a last group
// of at most 16 outputs) and its run of chunk records. static: each ISA's translation unit
// compiles its own copy (kernels/isa/ objects share no inline symbols).
struct Int8Group {
  int64_t col;
  int64_t blocks;
  int64_t record_bytes;      // one chunk record of this group
  const uint8_t* records;    // [chunks] records
};
static inline Int8Group int8_group(const PackedInt8View& w, int64_t g, int64_t num_chunks) {
  const int64_t col = g * kInt8Group;
  const int64_t blocks = w.out - col > kInt8Block ? 2 : 1;
  return {col, blocks, int8_record_bytes(w.bits, blocks),
          w.records + g * num_chunks * int8_record_bytes(w.bits, kInt8GroupBlocks)};
}

// Quantized activations of `rows` rows, written by the kernel before the product.
struct Int8Activations {
  int8_t* q;       // [rows, padded_in], zero in columns >= in
  float* scale;    // [rows, padded_in / 32]: t
  float* offset;   // [rows, padded_in / 32]: c = 128 t Σ q
};

// Quantizes one row of x ([in] f32) into row r of a: the scalar definition, which every
// kernel's vector version matches byte for byte.
void quantize_int8_row(const float* x, int64_t in, int64_t padded_in, int64_t r, const Int8Activations& a);

// x: [rows, in] f32; y: [rows, out] f32.
void int8_gemm_vnni512(const PackedInt8View& w, const float* x, const Int8Activations& a, float* y, int64_t rows);
// sums: [rows, padded_in / 32] int32 scratch (Σ q_x per chunk).
void int8_gemm_avx2(const PackedInt8View& w, const float* x, const Int8Activations& a, int32_t* sums, float* y,
                    int64_t rows);
// The same on AMX tiles (tdpbsud) where they pay (8-12 rows), int8_gemm_vnni512 for other row
// counts: the same bits either way.
void int8_gemm_amx(const PackedInt8View& w, const float* x, const Int8Activations& a, float* y, int64_t rows);
// The same on AVX-VNNI (256-bit vpdpbusd on the offset weights, as int8_gemm_vnni512: no sums).
void int8_gemm_avxvnni(const PackedInt8View& w, const float* x, const Int8Activations& a, float* y, int64_t rows);
// quantize_int8_row for rows [0, rows) of x with 8-lane vectors (the same bytes), also
// writing Σ q_x per chunk into sums ([rows, padded_in / 32]) unless it is null.
void quantize_int8_rows_avx2(const float* x, int64_t in, int64_t padded_in, int64_t rows, const Int8Activations& a,
                             int32_t* sums);

// quantize_int8_row for rows [0, rows) of x with 16-lane vectors (the same bytes).
void quantize_int8_rows_avx512(const float* x, int64_t in, int64_t padded_in, int64_t rows, const Int8Activations& a);

}  // namespace dspark::kernels
