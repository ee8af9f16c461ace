#include "plot/line_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/check.h"

namespace dspark::plot {
namespace {

constexpr int64_t kTextScale = 2;    // tick labels and legend
constexpr int64_t kPad = 16;         // image edge to anything drawn
constexpr int64_t kTickLength = 5;   // tick marks, outside the frame
constexpr int64_t kTickGap = 6;      // tick mark to its label
constexpr int64_t kLabelGap = 12;    // tick labels to the axis label
constexpr int64_t kTitleGap = 16;    // title to the plot
constexpr int64_t kLegendPad = 10;   // legend border to its contents, and legend to the frame
constexpr int64_t kSampleLength = 28;  // the line sample in a legend row
constexpr int64_t kRowGap = 4;       // between legend rows (below the descenders)
constexpr int64_t kMinPlotWidth = 80, kMinPlotHeight = 60;

constexpr Rgb kGrid{226, 226, 226};
constexpr Rgb kFrame{80, 80, 80};
constexpr Rgb kText = kBlack;

// Okabe & Ito (2008): distinguishable with the common colour-vision deficiencies.
constexpr Rgb kPalette[] = {{0, 114, 178},   {213, 94, 0},   {0, 158, 115}, {204, 121, 167},
                            {230, 159, 0},   {86, 180, 233}, {0, 0, 0}};
constexpr Marker kMarkers[] = {Marker::kCircle, Marker::kSquare, Marker::kTriangle, Marker::kDiamond};

// The largest scale (2, else 1) at which text fits in room pixels.
int64_t fit_scale(const std::string& text, int64_t room) {
  return Canvas::text_width(text, kTextScale) <= room ? kTextScale : 1;
}

int64_t widest(const std::vector<std::string>& texts) {
  int64_t w = 0;
  for (const std::string& t : texts) w = std::max(w, Canvas::text_width(t, kTextScale));
  return w;
}

// fraction of the way from lo to hi, as a pixel offset along n pixels
int64_t to_pixels(double v, double lo, double hi, int64_t n) {
  return std::lround((v - lo) / (hi - lo) * static_cast<double>(n - 1));
}

}  // namespace

AxisTicks nice_ticks(double lo, double hi, int64_t max_intervals) {
  DSPARK_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo < hi, "an axis needs lo < hi, got [{}, {}]", lo, hi);
  DSPARK_CHECK(max_intervals >= 1, "max_intervals must be >= 1, got {}", max_intervals);
  constexpr double kSlack = 1e-9;  // in steps: 140 / 20 may come out as 7.000000001
  for (int k = static_cast<int>(std::floor(std::log10((hi - lo) / static_cast<double>(max_intervals)))); ; ++k) {
    for (const double mantissa : {1.0, 2.0, 5.0}) {
      const double step = mantissa * std::pow(10.0, k);
      const auto first = static_cast<int64_t>(std::floor(lo / step + kSlack));
      const auto last = static_cast<int64_t>(std::ceil(hi / step - kSlack));
      if (last - first > max_intervals) continue;
      AxisTicks ticks;
      const int decimals = std::max(0, -k);
      for (int64_t i = first; i <= last; ++i) {
        ticks.values.push_back(static_cast<double>(i) * step);
        ticks.labels.push_back(fmt::format("{:.{}f}", ticks.values.back(), decimals));
      }
      ticks.min = ticks.values.front();
      ticks.max = ticks.values.back();
      return ticks;
    }
  }
}

AxisTicks log2_ticks(std::vector<double> xs) {
  DSPARK_CHECK(!xs.empty(), "a log axis needs at least one value");
  for (double x : xs) {
    DSPARK_CHECK(std::isfinite(x) && x > 0, "x = {} cannot go on a log axis (every x must be > 0)", x);
  }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  const double lo = std::log2(xs.front()), hi = std::log2(xs.back());
  const double pad = lo == hi ? 1.0 : std::max(0.25, 0.04 * (hi - lo));  // in doublings
  AxisTicks ticks;
  ticks.min = std::exp2(lo - pad);
  ticks.max = std::exp2(hi + pad);
  ticks.values = xs;
  for (double x : xs) ticks.labels.push_back(fmt::format("{:g}", x));
  return ticks;
}

Rgb series_color(size_t index) { return kPalette[index % std::size(kPalette)]; }
Marker series_marker(size_t index) { return kMarkers[index % std::size(kMarkers)]; }

LineChart::LineChart(std::vector<Series> series, ChartOptions options)
    : series_(std::move(series)), options_(std::move(options)) {
  const ChartOptions& o = options_;
  DSPARK_CHECK(!series_.empty(), "nothing to plot: no series");
  DSPARK_CHECK(o.width >= 200 && o.height >= 150, "a chart needs at least 200x150 pixels, got {}x{}", o.width,
               o.height);
  DSPARK_CHECK(o.line_width >= 1, "line_width must be >= 1, got {}", o.line_width);
  DSPARK_CHECK(o.marker_radius >= 0, "marker_radius must be >= 0, got {}", o.marker_radius);
  std::vector<double> xs;
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = 0, y_hi = 0;  // the y axis always shows 0
  for (Series& s : series_) {
    DSPARK_CHECK(!s.label.empty(), "every series needs a label");
    DSPARK_CHECK(!s.points.empty(), "series '{}' has no points", s.label);
    for (const Point& p : s.points) {
      DSPARK_CHECK(std::isfinite(p.x) && std::isfinite(p.y), "series '{}' has a non-finite point ({}, {})", s.label,
                   p.x, p.y);
      DSPARK_CHECK(!o.log_x || p.x > 0, "series '{}': x = {} cannot go on a log x axis (every x must be > 0)",
                   s.label, p.x);
      xs.push_back(p.x);
      x_lo = std::min(x_lo, p.x);
      x_hi = std::max(x_hi, p.x);
      y_lo = std::min(y_lo, p.y);
      y_hi = std::max(y_hi, p.y);
    }
    std::stable_sort(s.points.begin(), s.points.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
  }
  if (y_lo == y_hi) y_hi = 1;  // every y is 0
  y_ticks_ = nice_ticks(y_lo, y_hi);
  if (o.log_x) {
    x_ticks_ = log2_ticks(std::move(xs));
  } else {
    if (x_lo == x_hi) {  // one x: centre it
      x_lo -= 1;
      x_hi += 1;
    }
    x_ticks_ = nice_ticks(x_lo, x_hi);
  }
  title_scale_ = fit_scale(o.title, o.width - 2 * kPad);
  x_label_scale_ = fit_scale(o.x_label, o.width - 2 * kPad);
  y_label_scale_ = fit_scale(o.y_label, o.height - 2 * kPad);
  place_plot_and_legend();
}

void LineChart::place_plot_and_legend() {
  const ChartOptions& o = options_;
  const int64_t text_h = Canvas::text_height(kTextScale);
  const int64_t left = kPad + (o.y_label.empty() ? 0 : Canvas::text_height(y_label_scale_) + kLabelGap) +
                       widest(y_ticks_.labels) + kTickGap + kTickLength + 1;
  // The top y tick label is centred on the plot's top row: room for its upper half.
  const int64_t top = std::max(kPad + (o.title.empty() ? 0 : Canvas::text_height(title_scale_) + kTitleGap),
                               kPad + Canvas::text_ascent(kTextScale) / 2);
  const int64_t bottom = 1 + kTickLength + kTickGap + text_h +
                         (o.x_label.empty() ? 0 : kLabelGap + Canvas::text_height(x_label_scale_)) + kPad;
  const int64_t right = kPad + std::max<int64_t>(Canvas::text_width(x_ticks_.labels.back(), kTextScale) / 2, 1);
  plot_ = {left, top, o.width - left - right, o.height - top - bottom};
  DSPARK_CHECK(plot_.w >= kMinPlotWidth && plot_.h >= kMinPlotHeight,
               "a {}x{} image is too small for this chart's labels", o.width, o.height);

  std::vector<std::string> labels;
  for (const Series& s : series_) labels.push_back(s.label);
  const auto rows = static_cast<int64_t>(series_.size());
  const int64_t w = 3 * kLegendPad + kSampleLength + widest(labels);
  const int64_t h = 2 * kLegendPad + rows * text_h + (rows - 1) * kRowGap;
  const int64_t l = plot_.x + kLegendPad, r = plot_.right() - kLegendPad - w + 1, m = plot_.x + (plot_.w - w) / 2;
  const int64_t t = plot_.y + kLegendPad, b = plot_.bottom() - kLegendPad - h + 1;
  if (w + 2 * kLegendPad <= plot_.w && h + 2 * kLegendPad <= plot_.h) {
    for (const Rect& box : {Rect{l, t, w, h}, Rect{r, t, w, h}, Rect{r, b, w, h}, Rect{l, b, w, h}, Rect{m, t, w, h},
                            Rect{m, b, w, h}}) {
      if (!crosses_data(box)) {
        legend_ = box;
        return;
      }
    }
  }
  // Every corner is taken: the legend goes right of the plot, which narrows.
  plot_.w -= w + kPad;
  DSPARK_CHECK(plot_.w >= kMinPlotWidth, "a {}x{} image is too small for this chart's legend", o.width, o.height);
  legend_ = {plot_.right() + 1 + kPad, plot_.y, w, h};
}

bool LineChart::crosses_data(const Rect& box) const {
  const int64_t margin = options_.marker_radius + options_.line_width;
  const Rect near{box.x - margin, box.y - margin, box.w + 2 * margin, box.h + 2 * margin};
  for (const Series& s : series_) {
    int64_t px = pixel_x(s.points[0].x), py = pixel_y(s.points[0].y);
    if (near.contains(px, py)) return true;
    for (size_t i = 1; i < s.points.size(); ++i) {
      const int64_t qx = pixel_x(s.points[i].x), qy = pixel_y(s.points[i].y);
      const int64_t steps = std::max(std::abs(qx - px), std::abs(qy - py)) / 2 + 1;  // a sample every <= 2 px
      for (int64_t k = 1; k <= steps; ++k) {
        const double f = static_cast<double>(k) / static_cast<double>(steps);
        if (near.contains(px + std::lround(f * static_cast<double>(qx - px)),
                          py + std::lround(f * static_cast<double>(qy - py)))) {
          return true;
        }
      }
      px = qx;
      py = qy;
    }
  }
  return false;
}

int64_t LineChart::pixel_x(double x) const {
  if (options_.log_x) {
    return plot_.x + to_pixels(std::log2(x), std::log2(x_ticks_.min), std::log2(x_ticks_.max), plot_.w);
  }
  return plot_.x + to_pixels(x, x_ticks_.min, x_ticks_.max, plot_.w);
}

int64_t LineChart::pixel_y(double y) const {
  return plot_.bottom() - to_pixels(y, y_ticks_.min, y_ticks_.max, plot_.h);
}

Canvas LineChart::render() const {
  const ChartOptions& o = options_;
  const int64_t text_h = Canvas::text_height(kTextScale);
  Canvas c(o.width, o.height, kWhite);

  for (double v : y_ticks_.values) c.fill_rect(plot_.x, pixel_y(v), plot_.w, 1, kGrid);
  for (double v : x_ticks_.values) c.fill_rect(pixel_x(v), plot_.y, 1, plot_.h, kGrid);
  c.stroke_rect(plot_.x - 1, plot_.y - 1, plot_.w + 2, plot_.h + 2, kFrame);

  for (size_t i = 0; i < y_ticks_.values.size(); ++i) {
    const int64_t y = pixel_y(y_ticks_.values[i]);
    c.fill_rect(plot_.x - 1 - kTickLength, y, kTickLength, 1, kFrame);
    const std::string& label = y_ticks_.labels[i];
    c.draw_text(plot_.x - 1 - kTickLength - kTickGap - Canvas::text_width(label, kTextScale),
                y - Canvas::text_ascent(kTextScale) / 2, label, kText, kTextScale);
  }
  const int64_t x_labels_top = plot_.bottom() + 2 + kTickLength + kTickGap;
  int64_t last_label_end = std::numeric_limits<int64_t>::min() / 2;
  for (size_t i = 0; i < x_ticks_.values.size(); ++i) {
    const int64_t x = pixel_x(x_ticks_.values[i]);
    c.fill_rect(x, plot_.bottom() + 2, 1, kTickLength, kFrame);
    const std::string& label = x_ticks_.labels[i];
    const int64_t w = Canvas::text_width(label, kTextScale);
    const int64_t lx = std::clamp(x - w / 2, int64_t{0}, o.width - w);
    if (lx < last_label_end + kTickGap) continue;  // would touch its left neighbour: leave it out
    c.draw_text(lx, x_labels_top, label, kText, kTextScale);
    last_label_end = lx + w;
  }

  for (size_t s = 0; s < series_.size(); ++s) {
    const std::vector<Point>& p = series_[s].points;
    for (size_t i = 1; i < p.size(); ++i) {
      c.draw_line(pixel_x(p[i - 1].x), pixel_y(p[i - 1].y), pixel_x(p[i].x), pixel_y(p[i].y), series_color(s),
                  o.line_width);
    }
  }
  for (size_t s = 0; s < series_.size(); ++s) {  // markers over every line
    for (const Point& p : series_[s].points) {
      c.draw_marker(series_marker(s), pixel_x(p.x), pixel_y(p.y), o.marker_radius, series_color(s));
    }
  }

  c.fill_rect(legend_.x, legend_.y, legend_.w, legend_.h, kWhite);
  c.stroke_rect(legend_.x, legend_.y, legend_.w, legend_.h, kFrame);
  for (size_t s = 0; s < series_.size(); ++s) {
    const int64_t row_y = legend_.y + kLegendPad + static_cast<int64_t>(s) * (text_h + kRowGap);
    const int64_t mid = row_y + Canvas::text_ascent(kTextScale) / 2, x0 = legend_.x + kLegendPad;
    c.draw_line(x0, mid, x0 + kSampleLength - 1, mid, series_color(s), o.line_width);
    c.draw_marker(series_marker(s), x0 + kSampleLength / 2, mid, o.marker_radius, series_color(s));
    c.draw_text(x0 + kSampleLength + kLegendPad, row_y, series_[s].label, kText, kTextScale);
  }

  const int64_t plot_centre = plot_.x + plot_.w / 2;
  if (!o.title.empty()) {
    const int64_t w = Canvas::text_width(o.title, title_scale_);
    c.draw_text(std::clamp(plot_centre - w / 2, int64_t{0}, std::max<int64_t>(o.width - w, 0)), kPad, o.title, kText,
                title_scale_);
  }
  if (!o.x_label.empty()) {
    const int64_t w = Canvas::text_width(o.x_label, x_label_scale_);
    c.draw_text(std::clamp(plot_centre - w / 2, int64_t{0}, std::max<int64_t>(o.width - w, 0)),
                x_labels_top + text_h + kLabelGap, o.x_label, kText, x_label_scale_);
  }
  if (!o.y_label.empty()) {
    const int64_t h = Canvas::text_width(o.y_label, y_label_scale_);
    c.draw_text_up(kPad, std::max<int64_t>(plot_.y + (plot_.h - h) / 2, 0), o.y_label, kText, y_label_scale_);
  }
  return c;
}

}  // namespace dspark::plot
