// dspark plot: a line chart PNG from `dspark bench --json` result files. Each --series
// LABEL=PATH is one line: its points are the file's "levels", x and y read from the keys
// named by --x and --y (numbers; levels whose y is missing or null, such as "tau" without
// speculation, are left out). The label is the text before the last '=', the path the
// text after it; without '=' the label is the file name without its extension.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/check.h"
#include "plot/line_chart.h"
#include "plot/png_writer.h"

namespace dspark::cli {
namespace {

struct PlotArgs {
  std::vector<std::string> series;  // LABEL=PATH
  std::string x_key = "level";
  std::string y_key = "output_tokens_per_s";
  plot::ChartOptions chart;
  std::string out_path;
};

plot::Series read_series(const std::string& spec, const std::string& x_key, const std::string& y_key) {
  const size_t eq = spec.rfind('=');
  const std::filesystem::path path = eq == std::string::npos ? spec : spec.substr(eq + 1);
  plot::Series series;
  series.label = eq == std::string::npos ? path.stem().string() : spec.substr(0, eq);
  DSPARK_CHECK(!series.label.empty(), "--series '{}': the label before '=' is empty", spec);
  DSPARK_CHECK(!path.empty(), "--series '{}': no file after '='", spec);

  std::ifstream in(path);
  DSPARK_CHECK(in.good(), "--series '{}': cannot read {}", spec, path.string());
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    DSPARK_FAIL("{} is not valid JSON: {}", path.string(), e.what());
  }
  DSPARK_CHECK(doc.is_object() && doc.contains("levels") && doc["levels"].is_array(),
               "{} has no \"levels\" array: is it a `dspark bench --json` file?", path.string());
  for (const nlohmann::json& level : doc["levels"]) {
    DSPARK_CHECK(level.is_object(), "{}: every entry of \"levels\" must be an object", path.string());
    if (!level.contains(y_key) || level[y_key].is_null()) continue;
    DSPARK_CHECK(level[y_key].is_number(), "{}: \"{}\" is not a number in {}", path.string(), y_key, level.dump());
    DSPARK_CHECK(level.contains(x_key) && level[x_key].is_number(), "{}: no numeric \"{}\" in {}", path.string(),
                 x_key, level.dump());
    series.points.push_back({level[x_key].get<double>(), level[y_key].get<double>()});
  }
  DSPARK_CHECK(!series.points.empty(), "series '{}': no level of {} has a numeric \"{}\"", series.label, path.string(),
               y_key);
  return series;
}

void run_plot(const PlotArgs& args) {
  std::vector<plot::Series> series;
  for (const std::string& spec : args.series) series.push_back(read_series(spec, args.x_key, args.y_key));
  plot::ChartOptions options = args.chart;
  if (options.x_label.empty()) options.x_label = args.x_key;
  if (options.y_label.empty()) options.y_label = args.y_key;
  const plot::Canvas canvas = plot::LineChart(std::move(series), std::move(options)).render();
  plot::write_png(args.out_path, canvas.width(), canvas.height(), canvas.rgb());
  std::printf("%s\n", args.out_path.c_str());
}

}  // namespace

void register_plot(CLI::App& app) {
  auto args = std::make_shared<PlotArgs>();
  CLI::App* cmd = app.add_subcommand("plot", "Line chart PNG from `dspark bench --json` result files");
  cmd->add_option("--series", args->series,
                  "LABEL=PATH: one line from a bench JSON file (repeatable; the label ends at the last '=')")
      ->required();
  cmd->add_option("--x", args->x_key, "Level key on the x axis")->capture_default_str();
  cmd->add_option("--y", args->y_key, "Level key on the y axis (levels without it are skipped)")
      ->capture_default_str();
  cmd->add_option("--title", args->chart.title, "Chart title");
  cmd->add_option("--x-label", args->chart.x_label, "x axis label (default: the --x key)");
  cmd->add_option("--y-label", args->chart.y_label, "y axis label (default: the --y key)");
  cmd->add_flag("--log-x", args->chart.log_x, "log2 x axis with a tick at every x value");
  cmd->add_option("--width", args->chart.width, "Image width in pixels")->capture_default_str();
  cmd->add_option("--height", args->chart.height, "Image height in pixels")->capture_default_str();
  cmd->add_option("--out", args->out_path, "PNG file to write")->required();
  cmd->callback([args] { run_plot(*args); });
}

}  // namespace dspark::cli
