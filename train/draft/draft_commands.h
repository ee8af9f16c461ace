// The drafter subcommands of dspark-train: `regen` (regen.h), `draft` (draft_train.h),
// `eagle3` (eagle3_train.h), `calibrate` (calibrate.h), and the drafter side of `export`
// (drafter_io.h, eagle3_io.h): a checkpoint whose config.json is a speculators drafter config
// (DSpark, DFlash or EAGLE-3) is exported in speculators layout.
#pragma once

#include "train/export.h"

namespace CLI {
class App;
}

namespace dspark::train {

void add_drafter_commands(CLI::App& app);
// For add_export_command: adds --dtype / --verifier and claims drafter checkpoints.
ExportExtension drafter_export_extension();

}  // namespace dspark::train
