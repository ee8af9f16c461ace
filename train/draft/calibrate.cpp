#include "train/draft/calibrate.h"

#include <fstream>

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "train/checkpoint.h"
#include "train/draft/draft_eval.h"
#include "train/draft/drafter.h"
#include "train/draft/drafter_io.h"
#include "train/draft/regen_split.h"
#include "train/model/hf_weights.h"
#include "train/model/transformer.h"

namespace dspark::train {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The config directories calibration updates for the drafter path given.
std::vector<fs::path> config_dirs(const fs::path& drafter) {
  if (fs::exists(drafter / "config.json") && fs::exists(drafter / "model.safetensors")) return {drafter};
  std::vector<fs::path> out;
  const fs::path checkpoint = find_checkpoint(drafter);
  if (!checkpoint.empty()) out.push_back(checkpoint);
  if (fs::exists(drafter / "drafter" / "config.json")) out.push_back(drafter / "drafter");
  DSPARK_CHECK(!out.empty(), "calibrate: {} holds no drafter", drafter.string());
  return out;
}

json positions_json(const std::vector<PositionCalibration>& p) {
  json a = json::array();
  for (const auto& x : p)
    a.push_back({{"ece", x.ece}, {"mean_predicted", x.mean_predicted}, {"mean_observed", x.mean_observed}});
  return a;
}

}  // namespace

CalibrateResult run_calibration(const CalibrateOptions& o) {
  DSPARK_CHECK(!o.target.empty() && !o.drafter.empty() && !o.data.empty(),
               "calibrate: --target, --drafter and --data are required");
  at::set_num_threads(o.threads);
  auto print = [&](const std::string& line) {
    if (!o.quiet) fmt::print("{}\n", line);
  };
  auto target = load_hf_model(o.target);
  target->eval();
  const std::vector<fs::path> dirs = config_dirs(o.drafter);
  auto drafter = load_drafter(dirs.front(), *target);
  drafter->eval();
  DSPARK_CHECK(drafter->has_confidence(), "calibrate: drafter {} has no confidence head", o.drafter.string());

  DraftEvalOptions eval;
  eval.max_anchors = o.anchors;
  eval.bf16 = o.bf16;
  eval.pad_id = std::max<int32_t>(0, static_cast<int32_t>(target->config().eos_token_id));
  // The held-out sequences of one fit: its records (answers of the other kind left out) and
  // their evaluation.
  auto evaluate = [&](const fs::path& given, bool sampled) {
    const fs::path path = given.empty() ? o.data : given;
    RegenReadReport read_report;
    auto records = read_regen_data(path, target->config().vocab_size, &read_report);
    if (!read_report.summary().empty()) print(read_report.summary());
    std::erase_if(records, [&](const RegenRecord& r) { return r.temperature >= 0 && (r.temperature > 0) != sampled; });
    auto seqs = make_draft_sequences(records, /*held_out=*/true, o.val_fraction,
                                     static_cast<int32_t>(target->config().eos_token_id), o.max_len);
    if (o.max_sequences > 0) seqs = evenly_spaced(std::move(seqs), o.max_sequences);
    DSPARK_CHECK(!seqs.empty(), "calibrate: no held-out {} answer in {} (val_fraction {})",
                 sampled ? "sampled" : "greedy", path.string(), o.val_fraction);
    return evaluate_drafter(*target, *drafter, seqs, eval);
  };
  const DraftEvalResult e = evaluate(o.greedy_data, false);
  const DraftEvalResult es = evaluate(o.sampled_data, true);
  CalibrateResult result;
  result.num_blocks = e.confidence.num_blocks();
  result.num_sampled_blocks = es.confidence_sampled.num_blocks();
  result.num_greedy_sequences = e.num_sequences;
  result.num_sampled_sequences = es.num_sequences;
  DSPARK_CHECK(result.num_blocks > 0, "calibrate: no determinable greedy block in the held-out data");
  print(fmt::format("calibrate: greedy answers: {} held-out sequences, {} blocks ({} determinable), tau greedy {:.3f}; "
                    "sampled answers: {} held-out sequences, {} blocks, tau expected at temperature 1 {:.3f}; ECE "
                    "with {} equal-width bins",
                    e.num_sequences, e.num_blocks, result.num_blocks, e.tau_greedy, es.num_sequences, es.num_blocks,
                    es.tau_expected, o.sts.num_bins));
  result.sts = sequential_temperature_scaling(e.confidence, o.sts);
  result.sts_sampled = sequential_temperature_scaling(es.confidence_sampled, o.sts);
  result.with_repeat_shifts = fit_temperatures_and_repeat_shifts(e.confidence, o.sts);
  auto print_table = [&](const char* title, const StsResult& s) {
    print(title);
    print(" pos   T       ECE before  ECE after   mean a_j before  after   observed");
    for (size_t j = 0; j < s.temperatures.size(); ++j) {
      print(fmt::format(" {:<4}  {:<6.3f}  {:<10.4f}  {:<10.4f}  {:<15.4f}  {:<6.4f}  {:.4f}", j + 1,
                        s.temperatures[j], s.before[j].ece, s.after[j].ece, s.before[j].mean_predicted,
                        s.after[j].mean_predicted, s.after[j].mean_observed));
    }
  };
  print_table("greedy verification, STS alone:", result.sts);
  const RepeatCalibration& rc = result.with_repeat_shifts;
  int64_t agreeing = 0;
  for (int32_t m : e.confidence.repeat_agreement) agreeing += m > 0;
  print(fmt::format("greedy verification with repeat shifts (confidence_temperatures, confidence_repeat_shifts): "
                    "disagree {:+.3f}, agree {:+.3f} ({} of {} blocks start with a draft that agrees with the repeat "
                    "continuation)",
                    rc.shifts[0], rc.shifts[1], agreeing, result.num_blocks));
  print(" pos   T       ECE STS alone  with shifts   mean a_j STS alone  with shifts  observed");
  for (size_t j = 0; j < rc.sts.temperatures.size(); ++j) {
    const PositionCalibration& a = result.sts.after[j];
    const PositionCalibration& s = rc.sts.after[j];
    print(fmt::format(" {:<4}  {:<6.3f}  {:<13.4f}  {:<12.4f}  {:<18.4f}  {:<11.4f}  {:.4f}", j + 1,
                      rc.sts.temperatures[j], a.ece, s.ece, a.mean_predicted, s.mean_predicted, s.mean_observed));
  }
  print_table("sampled verification at temperature 1 (confidence_temperatures_sampled):", result.sts_sampled);
  const json report{{"temperatures", rc.sts.temperatures},
                    {"repeat_shifts", rc.shifts},
                    {"after_repeat_shifts", positions_json(rc.sts.after)},
                    {"temperatures_without_repeat_shifts", result.sts.temperatures},
                    {"num_bins", o.sts.num_bins},
                    {"blocks", result.num_blocks},
                    {"sequences", e.num_sequences},
                    {"data", (o.greedy_data.empty() ? o.data : o.greedy_data).string()},
                    {"tau_greedy", e.tau_greedy},
                    {"before", positions_json(result.sts.before)},
                    {"after", positions_json(result.sts.after)},
                    {"sampled",
                     {{"temperatures", result.sts_sampled.temperatures},
                      {"blocks", result.num_sampled_blocks},
                      {"sequences", es.num_sequences},
                      {"data", (o.sampled_data.empty() ? o.data : o.sampled_data).string()},
                      {"tau_expected", es.tau_expected},
                      {"before", positions_json(result.sts_sampled.before)},
                      {"after", positions_json(result.sts_sampled.after)}}}};
  if (o.write) {
    for (const fs::path& dir : dirs) {
      write_confidence_calibration(dir, rc.sts.temperatures, result.sts_sampled.temperatures,
                                   {rc.shifts.begin(), rc.shifts.end()});
      std::ofstream(dir / "calibration.json") << report.dump(2) << "\n";
      result.written.push_back(dir / "config.json");
      print(fmt::format("wrote confidence_temperatures, confidence_temperatures_sampled and confidence_repeat_shifts "
                        "to {}",
                        (dir / "config.json").string()));
    }
  }
  return result;
}

}  // namespace dspark::train
