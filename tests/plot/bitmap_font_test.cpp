#include "plot/bitmap_font.h"

#include <map>
#include <string>

#include <gtest/gtest.h>

namespace dspark::plot {
namespace {

TEST(BitmapFont, EveryPrintableCharacterHasItsOwnGlyph) {
  std::map<Glyph, char> seen;
  for (char c = kFirstGlyph; c <= kLastGlyph; ++c) {
    const Glyph& g = glyph(c);
    bool ink = false;
    for (uint8_t row : g) {
      EXPECT_EQ(row >> kGlyphWidth, 0) << "'" << c << "' has ink outside its 5 columns";
      ink |= row != 0;
    }
    EXPECT_EQ(ink, c != ' ') << "'" << c << "'";
    const auto [it, fresh] = seen.emplace(g, c);
    EXPECT_TRUE(fresh) << "'" << c << "' looks exactly like '" << it->second << "'";
  }
}

TEST(BitmapFont, OnlyDescendersGoBelowTheBaseline) {
  const std::string descenders = "gjpqy,;_";
  for (char c = kFirstGlyph; c <= kLastGlyph; ++c) {
    bool below = false;
    for (int64_t y = kGlyphAscent; y < kGlyphHeight; ++y) below |= glyph(c)[y] != 0;
    EXPECT_EQ(below, descenders.find(c) != std::string::npos) << "'" << c << "'";
  }
}

TEST(BitmapFont, InkMatchesTheRowBits) {
  // '1': the stem is column 2 on every row but the last, which is the base .###.
  for (int64_t y = 0; y < kGlyphAscent; ++y) EXPECT_TRUE(glyph_ink('1', 2, y)) << y;
  EXPECT_FALSE(glyph_ink('1', 2, kGlyphAscent));  // no descender
  EXPECT_FALSE(glyph_ink('1', 0, 0));
  EXPECT_FALSE(glyph_ink('1', 4, 6));
  for (int64_t x = 1; x <= 3; ++x) EXPECT_TRUE(glyph_ink('1', x, 6)) << x;
  EXPECT_FALSE(glyph_ink('1', 0, 6));
  EXPECT_THROW(glyph_ink('1', kGlyphWidth, 0), std::exception);
}

TEST(BitmapFont, UnprintableCharactersDrawAsQuestionMarks) {
  EXPECT_EQ(glyph('\n'), glyph('?'));
  EXPECT_EQ(glyph(static_cast<char>(200)), glyph('?'));
  EXPECT_EQ(glyph(127), glyph('?'));
}

}  // namespace
}  // namespace dspark::plot
