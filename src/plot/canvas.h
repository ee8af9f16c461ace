// Canvas: an 8-bit RGB raster, row-major with the origin at the top-left pixel, that
// primitives draw into: rectangles, lines of a given width, filled markers and text in
// the 5x7 bitmap font (plot/bitmap_font.h) magnified by an integer scale. Every primitive
// clips to the image: pixels outside it are silently dropped, so callers never check.
// No anti-aliasing: a pixel is either painted with the colour or left as it was.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace dspark::plot {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};

inline constexpr Rgb kWhite{255, 255, 255};
inline constexpr Rgb kBlack{0, 0, 0};

enum class Marker { kCircle, kSquare, kTriangle, kDiamond };

class Canvas {
 public:
  // A width x height image filled with background; both sides must be >= 1.
  Canvas(int64_t width, int64_t height, Rgb background = kWhite);

  int64_t width() const { return width_; }
  int64_t height() const { return height_; }
  bool contains(int64_t x, int64_t y) const { return x >= 0 && x < width_ && y >= 0 && y < height_; }
  Rgb pixel(int64_t x, int64_t y) const;  // throws outside the image
  const std::vector<uint8_t>& rgb() const { return rgb_; }  // [height, width, 3]

  void set_pixel(int64_t x, int64_t y, Rgb c);
  // The w x h rectangle whose top-left pixel is (x, y); nothing when w or h <= 0.
  void fill_rect(int64_t x, int64_t y, int64_t w, int64_t h, Rgb c);
  // The one-pixel outline of that rectangle.
  void stroke_rect(int64_t x, int64_t y, int64_t w, int64_t h, Rgb c);
  // Bresenham from (x0, y0) to (x1, y1), both ends included, stamping a width x width
  // square centred on each pixel (for even widths one more pixel up/left than down/right).
  void draw_line(int64_t x0, int64_t y0, int64_t x1, int64_t y1, Rgb c, int64_t width = 1);
  // A filled marker centred on (cx, cy) reaching radius pixels from the centre.
  void draw_marker(Marker shape, int64_t cx, int64_t cy, int64_t radius, Rgb c);

  // Text whose top-left corner is (x, y), each font pixel drawn as a scale x scale block.
  void draw_text(int64_t x, int64_t y, std::string_view text, Rgb c, int64_t scale = 1);
  // The same text turned 90 degrees counter-clockwise (read bottom to top); (x, y) is the
  // top-left corner of its box, text_height(scale) wide and text_width(text, scale) tall.
  void draw_text_up(int64_t x, int64_t y, std::string_view text, Rgb c, int64_t scale = 1);

  // The box text occupies: no blank column after the last glyph; 0 wide when empty; as
  // tall as a glyph with descenders. text_ascent: the rows above the baseline.
  static int64_t text_width(std::string_view text, int64_t scale = 1);
  static int64_t text_height(int64_t scale = 1);
  static int64_t text_ascent(int64_t scale = 1);

 private:
  int64_t width_, height_;
  std::vector<uint8_t> rgb_;  // [height, width, 3]
};

}  // namespace dspark::plot
