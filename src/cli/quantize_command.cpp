// dspark quantize: save a model with int8 weights (model/quantize_checkpoint.h), so that
// later loads skip the quantization.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "model/quantize_checkpoint.h"

namespace dspark::cli {
namespace {

struct QuantizeArgs {
  std::string model_dir;
  std::string out_dir;
};

}  // namespace

void register_quantize(CLI::App& app) {
  auto args = std::make_shared<QuantizeArgs>();
  CLI::App* cmd = app.add_subcommand("quantize", "Save a model with int8 matmul weights (quantized once)");
  cmd->add_option("--model", args->model_dir, "Hugging Face model directory")->required();
  cmd->add_option("--out", args->out_dir, "Directory for the quantized copy")->required();
  cmd->callback([args] {
    quantize_checkpoint(args->model_dir, args->out_dir);
    std::printf("wrote %s (int8 weights, %s)\n", args->out_dir.c_str(), kInt8QuantMethod);
  });
}

}  // namespace dspark::cli
