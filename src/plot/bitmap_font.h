// A 5x7 bitmap font for the printable ASCII characters 32..126, for chart labels. Each
// glyph is 9 rows, top first: capitals, digits and the body of lower-case letters stand on
// the baseline under row kGlyphAscent - 1, and descenders (g j p q y , ; _) use the two
// rows below it. In a row, bit (kGlyphWidth - 1 - x) is set when column x is ink.
// Characters are laid out kGlyphAdvance columns apart (one blank column between glyphs).
#pragma once

#include <array>
#include <cstdint>

namespace dspark::plot {

inline constexpr int64_t kGlyphWidth = 5;    // columns of ink
inline constexpr int64_t kGlyphHeight = 9;   // rows of ink, descenders included
inline constexpr int64_t kGlyphAscent = 7;   // rows above the baseline (capitals and digits)
inline constexpr int64_t kGlyphAdvance = 6;  // columns from one glyph to the next
inline constexpr char kFirstGlyph = ' ';     // 32
inline constexpr char kLastGlyph = '~';      // 126

using Glyph = std::array<uint8_t, kGlyphHeight>;  // [row] bit masks

// The glyph of c; characters outside 32..126 draw as '?'.
const Glyph& glyph(char c);

// Whether column x, row y (0 <= x < kGlyphWidth, 0 <= y < kGlyphHeight) of c's glyph is ink.
bool glyph_ink(char c, int64_t x, int64_t y);

}  // namespace dspark::plot
