#include "plot/line_chart.h"

#include <cmath>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/check.h"

namespace dspark::plot {
namespace {

using testing::ElementsAre;
using testing::HasSubstr;

// The message of the dspark::Error that f throws.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

int64_t count_colour(const Canvas& c, Rgb colour) {
  int64_t n = 0;
  for (int64_t y = 0; y < c.height(); ++y) {
    for (int64_t x = 0; x < c.width(); ++x) n += c.pixel(x, y) == colour;
  }
  return n;
}

Series rising(const std::string& label, double scale) {
  return {label,
          {{1, 10 * scale}, {2, 19 * scale}, {4, 35 * scale}, {8, 60 * scale}, {16, 90 * scale}, {32, 123 * scale}}};
}

TEST(NiceTicks, StepsOfOneTwoOrFiveCoverTheRange) {
  const AxisTicks t = nice_ticks(0, 123);
  EXPECT_THAT(t.values, ElementsAre(0, 20, 40, 60, 80, 100, 120, 140));
  EXPECT_THAT(t.labels, ElementsAre("0", "20", "40", "60", "80", "100", "120", "140"));
  EXPECT_EQ(t.min, 0);
  EXPECT_EQ(t.max, 140);

  EXPECT_THAT(nice_ticks(0, 7).values, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_THAT(nice_ticks(0, 9).values, ElementsAre(0, 2, 4, 6, 8, 10));
  EXPECT_THAT(nice_ticks(0, 140).values, ElementsAre(0, 20, 40, 60, 80, 100, 120, 140));  // ends exactly on a tick
  EXPECT_THAT(nice_ticks(1000, 5000).values.size(), 9u);                                   // every 500
  EXPECT_EQ(nice_ticks(0, 2600).max, 3000);                                               // every 500

  const AxisTicks fractions = nice_ticks(0, 1);
  EXPECT_THAT(fractions.labels, ElementsAre("0.0", "0.2", "0.4", "0.6", "0.8", "1.0"));
  const AxisTicks negative = nice_ticks(-0.3, 0.45);
  EXPECT_THAT(negative.labels, ElementsAre("-0.3", "-0.2", "-0.1", "0.0", "0.1", "0.2", "0.3", "0.4", "0.5"));

  EXPECT_THAT(error_of([] { nice_ticks(1, 1); }), HasSubstr("lo < hi"));
}

TEST(Log2Ticks, OneTickPerDistinctValue) {
  const AxisTicks t = log2_ticks({32, 1, 4, 2, 16, 8, 4});
  EXPECT_THAT(t.values, ElementsAre(1, 2, 4, 8, 16, 32));
  EXPECT_THAT(t.labels, ElementsAre("1", "2", "4", "8", "16", "32"));
  EXPECT_LT(t.min, 1);
  EXPECT_GT(t.max, 32);
  EXPECT_NEAR(std::log2(t.min) + std::log2(t.max), std::log2(32.0), 1e-12);  // padded evenly
  EXPECT_THAT(error_of([] { log2_ticks({1, 0}); }), HasSubstr("cannot go on a log axis"));
}

TEST(LineChart, AxesMapTheirEndsToThePlotEdges) {
  const LineChart chart({{"a", {{0, 0}, {10, 100}}}}, ChartOptions{});
  const Rect& plot = chart.plot_area();
  EXPECT_THAT(chart.x_ticks().values, ElementsAre(0, 2, 4, 6, 8, 10));
  EXPECT_THAT(chart.y_ticks().values, ElementsAre(0, 20, 40, 60, 80, 100));
  EXPECT_EQ(chart.pixel_x(0), plot.x);
  EXPECT_EQ(chart.pixel_x(10), plot.right());
  EXPECT_EQ(chart.pixel_y(0), plot.bottom());
  EXPECT_EQ(chart.pixel_y(100), plot.y);
  EXPECT_EQ(chart.pixel_x(5), plot.x + std::lround(0.5 * static_cast<double>(plot.w - 1)));
  EXPECT_EQ(chart.pixel_y(25), plot.bottom() - std::lround(0.25 * static_cast<double>(plot.h - 1)));
  EXPECT_GT(plot.w, 700);  // most of the 900x560 image
  EXPECT_GT(plot.h, 400);
}

TEST(LineChart, MarkersAreDrawnWhereThePointsMap) {
  ChartOptions options;
  options.log_x = true;
  const Series s = rising("none", 1);
  const LineChart chart({s}, options);
  const Canvas canvas = chart.render();
  EXPECT_EQ(canvas.width(), 900);
  EXPECT_EQ(canvas.height(), 560);
  // log2 axis: equal ratios are equal distances
  EXPECT_NEAR(chart.pixel_x(2) - chart.pixel_x(1), chart.pixel_x(32) - chart.pixel_x(16), 1);
  EXPECT_NEAR(chart.pixel_x(4) - chart.pixel_x(1), 2 * (chart.pixel_x(2) - chart.pixel_x(1)), 1);
  EXPECT_EQ(chart.y_ticks().max, 140);
  for (const Point& p : s.points) {
    const int64_t x = chart.pixel_x(p.x), y = chart.pixel_y(p.y);
    EXPECT_TRUE(chart.plot_area().contains(x, y));
    EXPECT_EQ(canvas.pixel(x, y), series_color(0)) << p.x;
    EXPECT_EQ(canvas.pixel(x + 4, y), series_color(0)) << p.x;  // a disc of radius 5, not a dot
  }
}

TEST(LineChart, SeriesGetDistinctColoursAndMarkers) {
  ChartOptions options;
  options.log_x = true;
  const LineChart chart({rising("none", 1), rising("fixed K=8", 1.6), rising("adaptive", 2.2)}, options);
  const Canvas canvas = chart.render();
  for (size_t i = 0; i < 3; ++i) {
    for (size_t j = 0; j < i; ++j) {
      EXPECT_NE(series_color(i), series_color(j));
      EXPECT_NE(series_marker(i), series_marker(j));
    }
    EXPECT_GT(count_colour(canvas, series_color(i)), 500) << i;  // line, markers, legend sample
  }
  EXPECT_EQ(chart.y_ticks().max, 300);  // 123 * 2.2 = 270.6
}

TEST(LineChart, LegendTakesAFreeCorner) {
  ChartOptions options;
  options.log_x = true;
  const LineChart up({rising("a", 1), rising("b", 2)}, options);
  EXPECT_EQ(up.legend().x, up.plot_area().x + 10);  // rising lines leave the top-left free
  EXPECT_EQ(up.legend().y, up.plot_area().y + 10);

  const LineChart down({{"falling", {{1, 100}, {2, 70}, {4, 40}, {8, 10}}}}, options);
  EXPECT_EQ(down.legend().right(), down.plot_area().right() - 10);  // top-right instead
  EXPECT_EQ(down.legend().y, down.plot_area().y + 10);

  for (const Series& s : {rising("a", 1), rising("b", 2)}) {
    for (const Point& p : s.points) EXPECT_FALSE(up.legend().contains(up.pixel_x(p.x), up.pixel_y(p.y))) << p.x;
  }

  // A valley over a floor: only the top centre is free.
  const LineChart valley({{"v", {{1, 100}, {4, 0}, {16, 100}}}, {"floor", {{1, 10}, {16, 10}}}}, options);
  EXPECT_EQ(valley.legend().y, valley.plot_area().y + 10);
  EXPECT_NEAR(valley.legend().x + valley.legend().w / 2.0, valley.plot_area().x + valley.plot_area().w / 2.0, 1);

  // Lines near the top and bottom and through every corner: the legend moves right of the plot.
  const LineChart crowded({{"x", {{1, 0}, {32, 100}}}, {"y", {{1, 100}, {32, 0}}}, {"top", {{1, 90}, {32, 90}}},
                           {"bottom", {{1, 10}, {32, 10}}}},
                          options);
  EXPECT_GT(crowded.legend().x, crowded.plot_area().right());
  EXPECT_LT(crowded.legend().right(), 900);
}

TEST(LineChart, TitleAndAxisLabelsAreDrawn) {
  ChartOptions options;
  options.title = "throughput";
  options.x_label = "concurrency";
  options.y_label = "output tokens/s";
  const LineChart chart({rising("a", 1)}, options);
  const Canvas with = chart.render();
  const Canvas without = LineChart({rising("a", 1)}, ChartOptions{}).render();
  auto black_in = [](const Canvas& c, int64_t x0, int64_t y0, int64_t x1, int64_t y1) {
    int64_t n = 0;
    for (int64_t y = y0; y < y1; ++y) {
      for (int64_t x = x0; x < x1; ++x) n += c.pixel(x, y) == kBlack;
    }
    return n;
  };
  const Rect& plot = chart.plot_area();
  EXPECT_GT(black_in(with, 0, 0, 900, plot.y - 8), 50);        // title
  EXPECT_EQ(black_in(without, 0, 0, 900, 8), 0);
  EXPECT_GT(black_in(with, 0, 530, 900, 560 - 16 + 1), 50);    // x label, bottom band
  EXPECT_GT(black_in(with, 0, plot.y, 16 + 14, plot.bottom()), 50);  // y label, left band
}

TEST(LineChart, BadInputIsAClearError) {
  ChartOptions log;
  log.log_x = true;
  EXPECT_THAT(error_of([] { LineChart({}, ChartOptions{}); }), HasSubstr("no series"));
  EXPECT_THAT(error_of([] { LineChart({{"empty", {}}}, ChartOptions{}); }), HasSubstr("series 'empty' has no points"));
  EXPECT_THAT(error_of([&] { LineChart({{"zero", {{0, 1}, {2, 3}}}}, log); }),
              HasSubstr("series 'zero': x = 0 cannot go on a log x axis"));
  EXPECT_THAT(error_of([&] { LineChart({{"neg", {{-1, 1}}}}, log); }), HasSubstr("x = -1"));
  EXPECT_THAT(error_of([] { LineChart({{"nan", {{1, std::nan("")}}}}, ChartOptions{}); }), HasSubstr("non-finite"));
  EXPECT_THAT(error_of([] { LineChart({{"", {{1, 1}}}}, ChartOptions{}); }), HasSubstr("needs a label"));
  ChartOptions tiny;
  tiny.width = 100;
  EXPECT_THAT(error_of([&] { LineChart({{"a", {{1, 1}}}}, tiny); }), HasSubstr("at least 200x150"));
}

TEST(LineChart, OnePointAndAllZeroValuesStillMakeAnAxis) {
  const LineChart single({{"one", {{4, 0}}}}, ChartOptions{});
  EXPECT_LT(single.x_ticks().min, 4);
  EXPECT_GT(single.x_ticks().max, 4);
  EXPECT_EQ(single.y_ticks().min, 0);
  EXPECT_GT(single.y_ticks().max, 0);
  const Canvas c = single.render();
  EXPECT_EQ(c.pixel(single.pixel_x(4), single.pixel_y(0)), series_color(0));
}

}  // namespace
}  // namespace dspark::plot
