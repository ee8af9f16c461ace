// The 64-byte AMX tile configuration (palette 1) that _tile_loadconfig reads, for the AMX
// kernels (internal to kernels/isa/). In an unnamed namespace, so each ISA translation unit
// has its own copy and the objects share no inline code (tests/kernels/isa_objects_check.sh).
#pragma once

#include <cstdint>

namespace dspark::kernels {
namespace {

struct alignas(64) AmxTileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of tile t
  uint8_t rows[16] = {};    // rows of tile t
};

}  // namespace
}  // namespace dspark::kernels
