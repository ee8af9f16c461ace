#include "plot/canvas.h"

#include <algorithm>
#include <cstdlib>

#include "core/check.h"
#include "plot/bitmap_font.h"

namespace dspark::plot {

Canvas::Canvas(int64_t width, int64_t height, Rgb background) : width_(width), height_(height) {
  DSPARK_CHECK(width >= 1 && height >= 1, "a canvas needs at least one pixel, got {}x{}", width, height);
  rgb_.resize(static_cast<size_t>(width * height * 3));
  for (size_t i = 0; i < rgb_.size(); i += 3) {
    rgb_[i] = background.r;
    rgb_[i + 1] = background.g;
    rgb_[i + 2] = background.b;
  }
}

Rgb Canvas::pixel(int64_t x, int64_t y) const {
  DSPARK_CHECK(contains(x, y), "pixel ({}, {}) is outside the {}x{} canvas", x, y, width_, height_);
  const size_t i = static_cast<size_t>((y * width_ + x) * 3);
  return {rgb_[i], rgb_[i + 1], rgb_[i + 2]};
}

void Canvas::set_pixel(int64_t x, int64_t y, Rgb c) {
  if (!contains(x, y)) return;
  const size_t i = static_cast<size_t>((y * width_ + x) * 3);
  rgb_[i] = c.r;
  rgb_[i + 1] = c.g;
  rgb_[i + 2] = c.b;
}

void Canvas::fill_rect(int64_t x, int64_t y, int64_t w, int64_t h, Rgb c) {
  const int64_t x_end = std::min(x + w, width_), y_end = std::min(y + h, height_);
  for (int64_t py = std::max<int64_t>(y, 0); py < y_end; ++py) {
    for (int64_t px = std::max<int64_t>(x, 0); px < x_end; ++px) set_pixel(px, py, c);
  }
}

void Canvas::stroke_rect(int64_t x, int64_t y, int64_t w, int64_t h, Rgb c) {
  if (w <= 0 || h <= 0) return;
  fill_rect(x, y, w, 1, c);
  fill_rect(x, y + h - 1, w, 1, c);
  fill_rect(x, y, 1, h, c);
  fill_rect(x + w - 1, y, 1, h, c);
}

void Canvas::draw_line(int64_t x0, int64_t y0, int64_t x1, int64_t y1, Rgb c, int64_t width) {
  DSPARK_CHECK(width >= 1, "line width must be >= 1, got {}", width);
  const int64_t before = width / 2;  // brush rows/columns up/left of the centre pixel
  const int64_t dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
  const int64_t sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
  int64_t err = dx + dy;
  for (;;) {
    fill_rect(x0 - before, y0 - before, width, width, c);
    if (x0 == x1 && y0 == y1) break;
    const int64_t e2 = 2 * err;
    if (e2 >= dy) {
      err += dy;
      x0 += sx;
    }
    if (e2 <= dx) {
      err += dx;
      y0 += sy;
    }
  }
}

void Canvas::draw_marker(Marker shape, int64_t cx, int64_t cy, int64_t radius, Rgb c) {
  DSPARK_CHECK(radius >= 0, "marker radius must be >= 0, got {}", radius);
  for (int64_t dy = -radius; dy <= radius; ++dy) {
    for (int64_t dx = -radius; dx <= radius; ++dx) {
      bool ink = false;
      switch (shape) {
        case Marker::kCircle: ink = dx * dx + dy * dy <= radius * radius + radius; break;
        case Marker::kSquare: ink = true; break;
        case Marker::kDiamond: ink = std::abs(dx) + std::abs(dy) <= radius; break;
        case Marker::kTriangle:  // apex at the top row, base on the bottom row
          ink = 2 * std::abs(dx) <= dy + radius;
          break;
      }
      if (ink) set_pixel(cx + dx, cy + dy, c);
    }
  }
}

void Canvas::draw_text(int64_t x, int64_t y, std::string_view text, Rgb c, int64_t scale) {
  DSPARK_CHECK(scale >= 1, "text scale must be >= 1, got {}", scale);
  for (size_t i = 0; i < text.size(); ++i) {
    const int64_t gx = x + static_cast<int64_t>(i) * kGlyphAdvance * scale;
    for (int64_t row = 0; row < kGlyphHeight; ++row) {
      for (int64_t col = 0; col < kGlyphWidth; ++col) {
        if (glyph_ink(text[i], col, row)) fill_rect(gx + col * scale, y + row * scale, scale, scale, c);
      }
    }
  }
}

void Canvas::draw_text_up(int64_t x, int64_t y, std::string_view text, Rgb c, int64_t scale) {
  DSPARK_CHECK(scale >= 1, "text scale must be >= 1, got {}", scale);
  // Upright text pixel (u, v) of a box text_width wide goes to (x + v, y + text_width - 1 - u).
  const int64_t length = text_width(text, scale);
  for (size_t i = 0; i < text.size(); ++i) {
    const int64_t gu = static_cast<int64_t>(i) * kGlyphAdvance * scale;
    for (int64_t row = 0; row < kGlyphHeight; ++row) {
      for (int64_t col = 0; col < kGlyphWidth; ++col) {
        if (!glyph_ink(text[i], col, row)) continue;
        const int64_t u_last = gu + (col + 1) * scale - 1;  // the block's rightmost upright column
        fill_rect(x + row * scale, y + length - 1 - u_last, scale, scale, c);
      }
    }
  }
}

int64_t Canvas::text_width(std::string_view text, int64_t scale) {
  if (text.empty()) return 0;
  return (static_cast<int64_t>(text.size()) * kGlyphAdvance - (kGlyphAdvance - kGlyphWidth)) * scale;
}

int64_t Canvas::text_height(int64_t scale) { return kGlyphHeight * scale; }

int64_t Canvas::text_ascent(int64_t scale) { return kGlyphAscent * scale; }

}  // namespace dspark::plot
