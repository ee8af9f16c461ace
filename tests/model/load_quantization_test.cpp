#include "model/load_quantization.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "core/check.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

std::filesystem::path dir_with_config(const std::string& name, const std::string& config) {
  const std::filesystem::path dir = testing::make_temp_dir(name);
  std::ofstream(dir / "config.json") << config;
  return dir;
}

TEST(ConfiguredQuantization, ReadsTheConfigsKey) {
  EXPECT_EQ(configured_quantization(dir_with_config("q-int8", R"({"hidden_size": 8, "quantization": "int8"})")),
            WeightQuantization::kInt8);
  EXPECT_EQ(configured_quantization(dir_with_config("q-int4", R"({"quantization": "int4"})")),
            WeightQuantization::kInt4);
  EXPECT_EQ(configured_quantization(dir_with_config("q-none", R"({"quantization": "none"})")),
            WeightQuantization::kNone);
  EXPECT_EQ(configured_quantization(dir_with_config("q-absent", R"({"hidden_size": 8})")), std::nullopt);
  EXPECT_EQ(configured_quantization(testing::make_temp_dir("q-no-config")), std::nullopt);  // the loader reports it
}

TEST(ConfiguredQuantization, RefusesWhatItCannotRead) {
  for (const char* config : {R"({"quantization": "int2"})", R"({"quantization": 8})", R"({"quantization": null})",
                             R"([1, 2])", R"({"quantization": )"}) {
    const auto dir = dir_with_config("q-bad", config);
    try {
      configured_quantization(dir);
      ADD_FAILURE() << "accepted " << config;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("config.json"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace dspark
