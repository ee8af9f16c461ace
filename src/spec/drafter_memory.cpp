#include "spec/drafter_memory.h"

#include <algorithm>

#include "core/check.h"

namespace dspark {

int64_t drafter_kv_blocks(int64_t max_running, int64_t max_model_len, int64_t context_window, int64_t extra,
                          int64_t block_size) {
  const int64_t context = context_window > 0 ? std::min(context_window, max_model_len) : max_model_len;
  return max_running * ((context + extra + block_size - 1) / block_size + 1 + (context_window > 0 ? 1 : 0));
}

std::unique_ptr<Transformer> load_target_for_drafter(const std::filesystem::path& target_dir, DType compute,
                                                     WeightQuantization quantization) {
  DSPARK_CHECK(std::filesystem::is_directory(target_dir), "target directory {} does not exist", target_dir.string());
  TransformerOptions options;
  options.compute = compute;
  options.quantization = quantization;
  options.max_batch_tokens = 1;
  options.max_sequences = 1;
  return Transformer::load(target_dir, options);
}

int64_t pending_positions_per_slot(int64_t requested, int64_t max_running, int64_t max_model_len,
                                   int64_t row_floats) {
  if (requested >= 0) return std::min(requested, max_model_len);
  constexpr int64_t kPendingBytes = int64_t{64} << 20;
  return std::min(kPendingBytes / (max_running * row_floats * static_cast<int64_t>(sizeof(float))), max_model_len);
}

}  // namespace dspark
