#include "model/load_quantization.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "core/check.h"

namespace dspark {

std::optional<WeightQuantization> configured_quantization(const std::filesystem::path& model_dir) {
  const std::filesystem::path path = model_dir / "config.json";
  std::ifstream in(path);
  if (!in.good()) return std::nullopt;
  const nlohmann::json config = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  DSPARK_CHECK(config.is_object(), "{}: not a JSON object", path.string());
  const auto it = config.find("quantization");
  if (it == config.end()) return std::nullopt;
  DSPARK_CHECK(it->is_string() && (*it == "none" || *it == "int8"),
               "{}: field 'quantization' must be \"none\" or \"int8\", got {}", path.string(), it->dump());
  return parse_quantization(it->get<std::string>());
}

}  // namespace dspark
