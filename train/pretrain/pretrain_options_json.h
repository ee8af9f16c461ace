// PretrainOptions as JSON (stored in every checkpoint's state.json), and the check a resumed
// run makes against the options its checkpoint was written with.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/pretrain/pretrain.h"

namespace dspark::train {

nlohmann::json options_to_json(const PretrainOptions& options);

// One sentence per option that changes the computation of a resumed run relative to the
// stored one (schedule, batch, mixture, precision...); empty when none.
std::vector<std::string> compare_resumed_options(const nlohmann::json& stored, const PretrainOptions& now);

}  // namespace dspark::train
