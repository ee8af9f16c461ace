#include "model/quantize_checkpoint.h"

#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "kernels/packed_int8_gemm.h"
#include "loader/config.h"
#include "model/fused_linear.h"
#include "loader/safetensors.h"

namespace dspark {
namespace {

namespace fs = std::filesystem;

// The weights Transformer runs through Linear: attention and MLP projections, LM head.
bool is_matmul_weight(const std::string& name) {
  static const std::regex pattern(
      R"(model\.layers\.\d+\.(self_attn\.(q|k|v|o)_proj|mlp\.(gate|up|down)_proj)\.weight|lm_head\.weight)");
  return std::regex_match(name, pattern);
}

// 4-bit values two to a byte, q + 8 in the low nibble for even columns and the high one for
// odd columns; a last odd column pairs with 8 (a zero weight).
std::vector<int8_t> pack_nibbles(const Int8Weights& q) {
  const int64_t row_bytes = (q.in + 1) / 2;
  std::vector<int8_t> packed(static_cast<size_t>(q.out * row_bytes));
  for (int64_t n = 0; n < q.out; ++n)
    for (int64_t j = 0; j < row_bytes; ++j) {
      const int lo = q.q[static_cast<size_t>(n * q.in + 2 * j)] + 8;
      const int hi = 2 * j + 1 < q.in ? q.q[static_cast<size_t>(n * q.in + 2 * j + 1)] + 8 : 8;
      packed[static_cast<size_t>(n * row_bytes + j)] = static_cast<int8_t>(static_cast<uint8_t>(lo | hi << 4));
    }
  return packed;
}

void add_quantized(std::vector<TensorToWrite>& out, const std::string& prefix, const std::vector<float>& w,
                   int64_t rows, int64_t cols, int bits) {
  const Int8Weights q = quantize_int8_weights(w.data(), rows, cols, bits);
  if (bits == 8) out.push_back(make_i8_tensor(prefix + ".weight", {rows, cols}, q.q));
  else out.push_back(make_i8_tensor(prefix + ".weight", {rows, (cols + 1) / 2}, pack_nibbles(q)));
  // 4-bit scales are f16 values (quantize_int8_weights), stored as they are packed
  const std::vector<int64_t> scale_shape = {rows, (cols + kInt8ScaleBlock - 1) / kInt8ScaleBlock};
  if (bits == 8) out.push_back(make_f32_tensor(prefix + ".weight_scale", scale_shape, q.scales));
  else out.push_back(make_f16_tensor(prefix + ".weight_scale", scale_shape, q.scales));
}

}  // namespace

void quantize_checkpoint(const fs::path& model_dir, const fs::path& out_dir, int bits) {
  DSPARK_CHECK(bits == 8 || bits == 4, "quantize: bits must be 8 or 4, got {}", bits);
  DSPARK_CHECK(fs::weakly_canonical(model_dir) != fs::weakly_canonical(out_dir),
               "quantize: the output directory must differ from the model directory {}", model_dir.string());
  std::ifstream config_file(model_dir / "config.json");
  DSPARK_CHECK(config_file, "quantize: cannot read {}", (model_dir / "config.json").string());
  nlohmann::json config_json;
  try {
    config_json = nlohmann::json::parse(config_file);
  } catch (const nlohmann::json::exception& e) {
    DSPARK_FAIL("quantize: {} is not valid JSON: {}", (model_dir / "config.json").string(), e.what());
  }
  const ModelConfig config = ModelConfig::from_json(config_json, (model_dir / "config.json").string());
  DSPARK_CHECK(!config_json.contains("quantization_config"), "quantize: {} is already quantized ({})",
               model_dir.string(), config_json["quantization_config"].dump());
  const WeightStore store(model_dir);

  std::vector<TensorToWrite> tensors;
  for (const std::string& name : store.names()) {
    const TensorInfo& info = store.find(name);
    if (is_matmul_weight(name)) {
      DSPARK_CHECK(info.shape.size() == 2, "quantize: {} has shape {}, expected a matrix", name, format_shape(info.shape));
      add_quantized(tensors, name.substr(0, name.size() - 7), store.load_f32(name, info.shape), info.shape[0],
                    info.shape[1], bits);
      continue;
    }
    DSPARK_CHECK(info.supported, "quantize: tensor '{}' has dtype {}, which cannot be copied", name, info.dtype_tag);
    TensorToWrite copy{name, info.dtype, info.shape, {}};
    copy.bytes.assign(info.bytes.begin(), info.bytes.end());
    tensors.push_back(std::move(copy));
  }
  if (config.tie_word_embeddings && !store.contains("lm_head.weight")) {
    const int64_t shape[2] = {config.vocab_size, config.hidden_size};
    add_quantized(tensors, "lm_head", store.load_f32("model.embed_tokens.weight", shape), config.vocab_size,
                  config.hidden_size, bits);
  }

  fs::create_directories(out_dir);
  fs::remove(out_dir / "model.safetensors.index.json");  // a stale index would shadow the new file
  for (const auto& entry : fs::directory_iterator(model_dir)) {
    const std::string file = entry.path().filename().string();
    if (!entry.is_regular_file() || entry.path().extension() == ".safetensors" ||
        file == "model.safetensors.index.json" || file == "config.json")
      continue;
    fs::copy_file(entry.path(), out_dir / file, fs::copy_options::overwrite_existing);
  }
  config_json["quantization_config"] = {{"quant_method", bits == 8 ? kInt8QuantMethod : kInt4QuantMethod},
                                        {"group_size", kInt8ScaleBlock}};
  std::ofstream(out_dir / "config.json") << config_json.dump(2) << '\n';
  write_safetensors(out_dir / "model.safetensors", tensors, {{"format", "pt"}});
}

}  // namespace dspark
