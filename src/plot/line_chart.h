// LineChart: one or more series of (x, y) points drawn as lines with markers over a grid,
// with a title, axis labels, tick labels and a legend, into a Canvas (plot/canvas.h).
// The y axis always includes 0 and ends on "nice" ticks (1, 2 or 5 x 10^k apart); the x
// axis is linear with nice ticks, or log2 with a tick at every distinct data x. Each
// series gets its own colour (Okabe-Ito, colour-blind safe) and marker shape, and its
// points are joined in increasing x. The legend goes in the first place inside the plot
// that no line or marker crosses (the corners top-left, top-right, bottom-right,
// bottom-left, then top and bottom centre), else to the right of the plot. The
// constructor validates and lays everything out once; render() draws exactly that
// layout, and the accessors let tests find things on it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plot/canvas.h"

namespace dspark::plot {

struct Point {
  double x = 0;
  double y = 0;
};

struct Series {
  std::string label;          // legend text; must not be empty
  std::vector<Point> points;  // at least one; finite values
};

struct ChartOptions {
  std::string title;           // centred above the plot; empty: none
  std::string x_label;         // under the x axis; empty: none
  std::string y_label;         // left of the y axis, reading upwards; empty: none
  bool log_x = false;          // log2 x axis, ticks at the data x values (every x must be > 0)
  int64_t width = 900;         // image width in pixels (>= 200)
  int64_t height = 560;        // image height in pixels (>= 150)
  int64_t line_width = 3;      // series line width in pixels (>= 1)
  int64_t marker_radius = 5;   // series marker radius in pixels (>= 0)
};

// An axis: its ends in data units and its ticks, increasing, with their labels.
struct AxisTicks {
  double min = 0;
  double max = 1;
  std::vector<double> values;
  std::vector<std::string> labels;  // one per value
};

// Ticks step = 1, 2 or 5 x 10^k apart, the smallest such step that spans [lo, hi] in at
// most max_intervals steps; the axis ends on ticks: (0, 123) -> 0, 20, ..., 140.
AxisTicks nice_ticks(double lo, double hi, int64_t max_intervals = 8);
// A tick at every distinct value of xs (all > 0); the axis reaches a little beyond both
// ends in log2 space so that markers do not sit on the frame.
AxisTicks log2_ticks(std::vector<double> xs);

// Series index -> its colour and marker; both repeat after their palettes run out.
Rgb series_color(size_t index);
Marker series_marker(size_t index);

// A pixel rectangle: left column x, top row y, w columns, h rows.
struct Rect {
  int64_t x = 0, y = 0, w = 0, h = 0;
  int64_t right() const { return x + w - 1; }   // last column inside
  int64_t bottom() const { return y + h - 1; }  // last row inside
  bool contains(int64_t px, int64_t py) const { return px >= x && px <= right() && py >= y && py <= bottom(); }
};

class LineChart {
 public:
  // Throws a dspark::Error on bad input: no series, a series without points or label,
  // a non-finite value, x <= 0 on a log axis, an image too small for its labels.
  LineChart(std::vector<Series> series, ChartOptions options);

  const AxisTicks& x_ticks() const { return x_ticks_; }
  const AxisTicks& y_ticks() const { return y_ticks_; }
  const Rect& plot_area() const { return plot_; }  // inside the frame; data maps here
  const Rect& legend() const { return legend_; }
  int64_t pixel_x(double x) const;  // column of data x
  int64_t pixel_y(double y) const;  // row of data y

  Canvas render() const;

 private:
  void place_plot_and_legend();
  bool crosses_data(const Rect& box) const;

  std::vector<Series> series_;  // points sorted by x
  ChartOptions options_;
  AxisTicks x_ticks_, y_ticks_;
  Rect plot_, legend_;
  int64_t title_scale_ = 2, x_label_scale_ = 2, y_label_scale_ = 2;  // text magnification
};

}  // namespace dspark::plot
