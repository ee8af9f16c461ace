// Prometheus text exposition format (version 0.0.4): a writer for counter, gauge and
// histogram families, and a Histogram with fixed buckets.
//
// Output per family: "# HELP name text", "# TYPE name type", then one sample per line,
// "name{label="value",...} number". Histograms write cumulative name_bucket{le="..."}
// lines ending with le="+Inf", then name_sum and name_count. Label values are escaped
// (\\, \", \n); integral values print without a decimal point.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dspark {

// Fixed upper bounds (ascending, +Inf implied). Not thread-safe: its owner locks.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);

  void observe(double value);

  const std::vector<double>& upper_bounds() const { return bounds_; }
  // Observations <= upper_bounds()[i] (cumulative), then the total: [bounds + 1].
  std::vector<uint64_t> cumulative_counts() const;
  double sum() const { return sum_; }
  uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // [bounds + 1] per bucket, not cumulative
  double sum_ = 0;
  uint64_t count_ = 0;
};

using Labels = std::vector<std::pair<std::string, std::string>>;

class PrometheusWriter {
 public:
  // Starts a family; type is "counter", "gauge" or "histogram".
  void family(std::string_view name, std::string_view help, std::string_view type);
  void sample(std::string_view name, double value, const Labels& labels = {});
  // family + one unlabelled sample.
  void counter(std::string_view name, std::string_view help, double value);
  void gauge(std::string_view name, std::string_view help, double value);
  void histogram(std::string_view name, std::string_view help, const Histogram& h);

  const std::string& text() const { return out_; }

 private:
  std::string out_;
};

std::string format_prometheus_value(double value);
std::string escape_label_value(std::string_view value);

}  // namespace dspark
