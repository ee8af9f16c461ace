// dspark quantize: save a model with int8 or 4-bit weights (model/quantize_checkpoint.h), so
// that later loads skip the quantization.
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
  int bits = 8;
};

}  // namespace

void register_quantize(CLI::App& app) {
  auto args = std::make_shared<QuantizeArgs>();
  CLI::App* cmd = app.add_subcommand("quantize", "Save a model with int8 or 4-bit matmul weights (quantized once)");
  cmd->add_option("--model", args->model_dir, "Hugging Face model directory")->required();
  cmd->add_option("--out", args->out_dir, "Directory for the quantized copy")->required();
  cmd->add_option("--bits", args->bits, "Bits per weight: 8 (int8) or 4 (int4)")
      ->check(CLI::IsMember({8, 4}))
      ->capture_default_str();
  cmd->callback([args] {
    quantize_checkpoint(args->model_dir, args->out_dir, args->bits);
    std::printf("wrote %s (int%d weights, %s)\n", args->out_dir.c_str(), args->bits,
                args->bits == 8 ? kInt8QuantMethod : kInt4QuantMethod);
  });
}

}  // namespace dspark::cli
