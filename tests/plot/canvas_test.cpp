#include "plot/canvas.h"

#include <cstdlib>
#include <set>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "core/check.h"
#include "plot/bitmap_font.h"

namespace dspark::plot {
namespace {

using Pixels = std::set<std::pair<int64_t, int64_t>>;  // (x, y)

constexpr Rgb kInk{200, 30, 40};

// Every pixel that is not the white background.
Pixels painted(const Canvas& c) {
  Pixels out;
  for (int64_t y = 0; y < c.height(); ++y) {
    for (int64_t x = 0; x < c.width(); ++x) {
      if (c.pixel(x, y) != kWhite) out.insert({x, y});
    }
  }
  return out;
}

Pixels box(int64_t x0, int64_t y0, int64_t x1, int64_t y1) {  // inclusive corners
  Pixels out;
  for (int64_t y = y0; y <= y1; ++y) {
    for (int64_t x = x0; x <= x1; ++x) out.insert({x, y});
  }
  return out;
}

TEST(Canvas, StartsAsTheBackgroundAndKeepsColours) {
  Canvas c(4, 3, Rgb{1, 2, 3});
  EXPECT_EQ(c.rgb().size(), 4u * 3u * 3u);
  EXPECT_EQ(c.pixel(3, 2), (Rgb{1, 2, 3}));
  c.set_pixel(3, 2, kInk);
  EXPECT_EQ(c.pixel(3, 2), kInk);
  EXPECT_EQ(c.rgb()[(2 * 4 + 3) * 3 + 1], 30);  // row-major RGB
  EXPECT_THROW(c.pixel(4, 0), Error);
  EXPECT_THROW(Canvas(0, 3), Error);
}

TEST(Canvas, HorizontalLineOfWidthOne) {
  Canvas c(12, 8);
  c.draw_line(2, 3, 8, 3, kInk);
  EXPECT_EQ(painted(c), box(2, 3, 8, 3));
  EXPECT_EQ(c.pixel(5, 3), kInk);
}

TEST(Canvas, VerticalLineOfWidthThreeIsCentred) {
  Canvas c(12, 10);
  c.draw_line(5, 6, 5, 1, kInk, 3);  // drawn bottom-up: same pixels
  EXPECT_EQ(painted(c), box(4, 0, 6, 7));
}

TEST(Canvas, EvenWidthsLeanUpAndLeft) {
  Canvas c(12, 10);
  c.draw_line(3, 4, 7, 4, kInk, 2);
  EXPECT_EQ(painted(c), box(2, 3, 7, 4));
}

TEST(Canvas, DiagonalLineIsOnePixelPerStep) {
  Canvas c(6, 6);
  c.draw_line(0, 0, 4, 4, kInk);
  EXPECT_EQ(painted(c), (Pixels{{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}}));
}

TEST(Canvas, FillRectIsExactAndClips) {
  Canvas c(10, 8);
  c.fill_rect(2, 1, 3, 4, kInk);
  EXPECT_EQ(painted(c), box(2, 1, 4, 4));
  Canvas d(5, 5);
  d.fill_rect(-2, -2, 4, 4, kInk);  // mostly off the image
  d.fill_rect(4, 4, 10, 10, kInk);
  d.fill_rect(1, 1, 0, 3, kInk);  // empty
  Pixels expected = box(0, 0, 1, 1);
  expected.insert({4, 4});
  EXPECT_EQ(painted(d), expected);
}

TEST(Canvas, StrokeRectIsTheOutline) {
  Canvas c(8, 8);
  c.stroke_rect(1, 2, 4, 3, kInk);
  Pixels expected = box(1, 2, 4, 4);
  expected.erase({2, 3});
  expected.erase({3, 3});
  EXPECT_EQ(painted(c), expected);
}

TEST(Canvas, MarkersStayInsideTheirRadius) {
  for (const Marker m : {Marker::kCircle, Marker::kSquare, Marker::kTriangle, Marker::kDiamond}) {
    Canvas c(21, 21);
    c.draw_marker(m, 10, 10, 4, kInk);
    const Pixels p = painted(c);
    EXPECT_TRUE(p.count({10, 10})) << static_cast<int>(m);
    for (const auto& [x, y] : p) {
      EXPECT_LE(std::abs(x - 10), 4);
      EXPECT_LE(std::abs(y - 10), 4);
    }
  }
  Canvas square(21, 21);
  square.draw_marker(Marker::kSquare, 10, 10, 2, kInk);
  EXPECT_EQ(painted(square), box(8, 8, 12, 12));
  Canvas triangle(21, 21);
  triangle.draw_marker(Marker::kTriangle, 10, 10, 3, kInk);
  EXPECT_EQ(painted(triangle).count({10, 7}), 1u);  // the apex, alone on the top row
  EXPECT_EQ(painted(triangle).count({9, 7}), 0u);
  EXPECT_EQ(painted(triangle).count({7, 13}), 1u);  // the base spans the full width
  EXPECT_EQ(painted(triangle).count({13, 13}), 1u);
  Canvas dot(3, 3);
  dot.draw_marker(Marker::kCircle, 1, 1, 0, kInk);
  EXPECT_EQ(painted(dot), (Pixels{{1, 1}}));
}

TEST(Canvas, TextSizes) {
  EXPECT_EQ(Canvas::text_width("", 2), 0);
  EXPECT_EQ(Canvas::text_width("A", 1), 5);
  EXPECT_EQ(Canvas::text_width("AB", 2), 22);  // 6 + 5 columns, doubled
  EXPECT_EQ(Canvas::text_height(2), 18);  // descenders included
  EXPECT_EQ(Canvas::text_ascent(2), 14);
}

TEST(Canvas, GlyphPixelsAreTheFontScaledUpInsideItsBox) {
  Canvas c(30, 30);
  c.draw_text(3, 2, "A", kInk, 2);
  Pixels expected;
  for (int64_t y = 0; y < kGlyphHeight; ++y) {
    for (int64_t x = 0; x < kGlyphWidth; ++x) {
      if (glyph_ink('A', x, y)) {
        for (const auto& p : box(3 + 2 * x, 2 + 2 * y, 4 + 2 * x, 3 + 2 * y)) expected.insert(p);
      }
    }
  }
  const Pixels p = painted(c);
  EXPECT_EQ(p, expected);
  for (const auto& [x, y] : p) {
    EXPECT_TRUE(x >= 3 && x < 3 + Canvas::text_width("A", 2) && y >= 2 && y < 2 + Canvas::text_height(2));
  }
}

TEST(Canvas, SecondGlyphStartsOneAdvanceLater) {
  Canvas one(40, 10), two(40, 10);
  one.draw_text(0, 0, "7", kInk);
  two.draw_text(0, 0, " 7", kInk);
  Pixels shifted;
  for (const auto& [x, y] : painted(one)) shifted.insert({x + kGlyphAdvance, y});
  EXPECT_EQ(painted(two), shifted);
}

TEST(Canvas, UpwardTextIsUprightTextTurnedLeft) {
  const std::string text = "Ab1";
  const int64_t w = Canvas::text_width(text, 2), h = Canvas::text_height(2);
  Canvas upright(w, h), turned(h + 4, w + 6);
  upright.draw_text(0, 0, text, kInk, 2);
  turned.draw_text_up(1, 2, text, kInk, 2);
  Pixels expected;  // upright (u, v) -> (x + v, y + w - 1 - u)
  for (const auto& [u, v] : painted(upright)) expected.insert({1 + v, 2 + w - 1 - u});
  EXPECT_EQ(painted(turned), expected);
}

}  // namespace
}  // namespace dspark::plot
