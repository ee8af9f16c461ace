#include "server/prometheus.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/check.h"

namespace dspark {

Histogram::Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1) {
  DSPARK_CHECK(std::is_sorted(bounds_.begin(), bounds_.end()) &&
                   std::adjacent_find(bounds_.begin(), bounds_.end()) == bounds_.end(),
               "histogram bounds must be strictly ascending");
}

void Histogram::observe(double value) {
  if (std::isnan(value)) return;
  // Prometheus buckets are "less than or equal": the first bound >= value.
  const size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  ++counts_[i];
  sum_ += value;
  ++count_;
}

std::vector<uint64_t> Histogram::cumulative_counts() const {
  std::vector<uint64_t> out(counts_.size());
  uint64_t total = 0;
  for (size_t i = 0; i < counts_.size(); ++i) out[i] = total += counts_[i];
  return out;
}

std::string format_prometheus_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

void PrometheusWriter::family(std::string_view name, std::string_view help, std::string_view type) {
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void PrometheusWriter::sample(std::string_view name, double value, const Labels& labels) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      out_ += fmt::format("{}{}=\"{}\"", i ? "," : "", labels[i].first, escape_label_value(labels[i].second));
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += format_prometheus_value(value);
  out_ += '\n';
}

void PrometheusWriter::counter(std::string_view name, std::string_view help, double value) {
  family(name, help, "counter");
  sample(name, value);
}

void PrometheusWriter::gauge(std::string_view name, std::string_view help, double value) {
  family(name, help, "gauge");
  sample(name, value);
}

void PrometheusWriter::histogram(std::string_view name, std::string_view help, const Histogram& h) {
  family(name, help, "histogram");
  const std::string bucket = std::string(name) + "_bucket";
  const std::vector<uint64_t> cumulative = h.cumulative_counts();
  for (size_t i = 0; i < h.upper_bounds().size(); ++i) {
    sample(bucket, static_cast<double>(cumulative[i]), {{"le", format_prometheus_value(h.upper_bounds()[i])}});
  }
  sample(bucket, static_cast<double>(cumulative.back()), {{"le", "+Inf"}});
  sample(std::string(name) + "_sum", h.sum());
  sample(std::string(name) + "_count", static_cast<double>(h.count()));
}

}  // namespace dspark
