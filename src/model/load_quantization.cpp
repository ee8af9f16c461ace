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
  // Unlike an unset field in a parsed config, an empty string here is a value, and not one of the three.
  DSPARK_CHECK(it->is_string() && !it->get<std::string>().empty(),
               "{}: field 'quantization' must be \"none\", \"int8\" or \"int4\", got {}", path.string(), it->dump());
  const std::string value = it->get<std::string>();
  check_configured_quantization(value, path.string());
  return parse_quantization(value);
}

void check_configured_quantization(const std::string& value, const std::string& source) {
  DSPARK_CHECK(value.empty() || value == "none" || value == "int8" || value == "int4",
               "{}: field 'quantization' must be \"none\", \"int8\" or \"int4\", got '{}'", source, value);
}

std::optional<WeightQuantization> stored_quantization(const ModelConfig& config) {
  if (config.stored_weight_bits == 8) return WeightQuantization::kInt8;
  if (config.stored_weight_bits == 4) return WeightQuantization::kInt4;
  return std::nullopt;
}

}  // namespace dspark
