// A tile kernel's instantiations in a table indexed at run time by rows and blocks
// (internal to kernels/isa/). Each ISA translation unit passes a file-local Tile type, so
// every instantiation has internal linkage: no copy compiled for one ISA can be shared
// with another unit.
//
// Tile provides `using Fn = <function pointer type>;` and
// `template <int kRows, int kBlocks> static constexpr Fn run = <its tile<kRows, kBlocks>>;`.
#pragma once

#include <array>
#include <cstdint>
#include <utility>

namespace dspark::kernels {

template <typename Tile, int kRows, int... kBlocks>
constexpr std::array<typename Tile::Fn, sizeof...(kBlocks)> tile_row(std::integer_sequence<int, kBlocks...>) {
  return {Tile::template run<kRows, kBlocks + 1>...};
}

template <typename Tile, int kMaxBlocks, int... kRows>
constexpr auto tile_rows(std::integer_sequence<int, kRows...>) {
  return std::array{tile_row<Tile, kRows + 1>(std::make_integer_sequence<int, kMaxBlocks>{})...};
}

// Tile::run<rows, blocks>, with rows clamped to [1, kMaxRows] and blocks to [1, kMaxBlocks].
template <typename Tile, int kMaxRows, int kMaxBlocks>
typename Tile::Fn tile_for(int64_t rows, int64_t blocks) {
  static constexpr auto kTable = tile_rows<Tile, kMaxBlocks>(std::make_integer_sequence<int, kMaxRows>{});
  const int64_t r = rows < 1 ? 1 : rows > kMaxRows ? kMaxRows : rows;
  const int64_t b = blocks < 1 ? 1 : blocks > kMaxBlocks ? kMaxBlocks : blocks;
  return kTable[static_cast<size_t>(r - 1)][static_cast<size_t>(b - 1)];
}

}  // namespace dspark::kernels
