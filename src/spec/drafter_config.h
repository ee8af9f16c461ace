// DrafterConfig: the config.json of a block drafter (DSpark or DFlash) in the
// "speculators" layout (DESIGN §5), parsed strictly, validated once, and written back.
//
//   architectures            ["DSparkDraftModel"] | ["DFlashDraftModel"] (also accepted:
//                            "DSparkSpeculator", "DFlashSpeculator"); must agree with
//   speculators_model_type   "dspark" | "dflash"
//   transformer_layer_config the draft layers, a Hugging Face config (llama / qwen3 / ...):
//                            hidden_size, num_hidden_layers (= draft layers), heads, head_dim,
//                            intermediate_size, rms_norm_eps, rope_theta, vocab_size, ...
//   block_size               γ: block positions per pass (anchor + γ−1 masks)
//   aux_hidden_state_layer_ids   target layers feeding fc (convention below)
//   mask_token_id            the id whose embedding fills the masked block positions
//   target_hidden_size, draft_vocab_size (V_d <= vocab_size; less: a reduced vocabulary with
//                            its d2t map, spec/draft_vocab.h)
//   greedy_draft_vocab_size  optional, 0 < V_g < V_d: a second, smaller draft vocabulary
//                            for greedy requests only (tensors greedy_vocab.*,
//                            spec/draft_vocab_head.h). Absent = none.
//   sample_from_anchor       optional; default true for dspark, false for dflash: whether the
//                            anchor slot predicts (γ drafts) or not (γ−1 drafts)
//   markov_rank, markov_head_type, enable_confidence_head, confidence_head_with_markov
//                            markov_head_type "vanilla": the Markov feature of draft j is
//                            W₁[x_{j−1}]; "contextual": W₁[x_{j−1}] + W_out·SiLU(W_in·[h_j ;
//                            W₁[x_{j−1}]]) with an MLP of width markov_context_size (required
//                            then, absent otherwise), so the correction for the previous token
//                            can depend on the block's state (spec/dspark_heads.h)
//   confidence_temperatures  optional [num_drafts] floats > 0: Sequential Temperature Scaling
//                            result; c_j = sigmoid(z_j / T_j). Absent = all 1 (uncalibrated).
//   confidence_temperatures_sampled  optional, the same for requests that sample (fitted
//                            on sampled verification at temperature 1, whose drafts survive
//                            less often than greedy ones). Absent = confidence_temperatures.
//   confidence_repeat_shifts optional [2] finite floats [disagree, agree], for greedy
//                            requests: added to the scaled logit, c_j = sigmoid(z_j / T_j +
//                            shift), by whether drafts 1..j all equal the continuation the
//                            context predicts by repeating itself (spec/tail_match.h). Greedy
//                            decoding falls into loops where such drafts survive almost surely,
//                            and STS fitted on all drafts at once is too sure of the others.
//                            Fitted after STS (`dspark-train calibrate`). Absent = [0, 0].
//                            Never for sampling requests: the shift looks at draft j itself,
//                            and a sampled round's verified length must not depend on it (the
//                            output would no longer follow the target's distribution).
//   speculators_config       {algorithm, proposal_methods: [{proposal_type: "greedy",
//                            speculative_tokens}], default_proposal_method,
//                            verifier: {name_or_path, architectures}}
//
// Layer-index convention. aux_hidden_state_layer_ids follow vLLM / speculators: id k is the
// residual stream after k decoder layers (Hugging Face hidden_states[k]), i.e. the OUTPUT OF
// DECODER LAYER k−1; k = num_hidden_layers is the last layer's output before the final norm,
// k = 0 (the embeddings) is not supported. The engine captures "output of decoder layer l"
// (TransformerOptions::capture_layers), so capture layer = id − 1. DeepSpec's and z-lab
// DFlash's own target_layer_ids are already 0-based "output of layer l" (they read
// hidden_states[id + 1]); their Qwen3-4B [1, 9, 17, 25, 33] is [2, 10, 18, 26, 34] here.
// aux_layer_id_to_capture_layer / capture_layer_to_aux_layer_id are the only conversion.
//
// Errors name the file and field: a missing or mistyped field, an unknown model type or
// architecture, a Markov head type other than vanilla or contextual (or
// a contextual one without its width), a confidence head on the Markov
// feature without a Markov head, temperatures of the wrong count. validate_for_target()
// then checks the drafter against the target it will serve (hidden size, vocabulary,
// layer ids, mask token id) and names both values.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "loader/config.h"

namespace dspark {

enum class DrafterKind { kDSpark, kDFlash };

// aux_hidden_state_layer_ids entry -> the engine's capture layer (output of decoder layer l).
int32_t aux_layer_id_to_capture_layer(int32_t aux_layer_id);
int32_t capture_layer_to_aux_layer_id(int32_t capture_layer);

struct DrafterConfig {
  DrafterKind kind = DrafterKind::kDSpark;
  std::string architecture = "DSparkDraftModel";
  ModelConfig layer;                          // transformer_layer_config
  int32_t block_size = 8;                     // γ
  std::vector<int32_t> aux_hidden_state_layer_ids;  // speculators convention (see above)
  int32_t mask_token_id = 0;
  int64_t target_hidden_size = 0;
  int64_t draft_vocab_size = 0;               // V_d <= vocab_size; less = a reduced vocabulary (d2t)
  int64_t greedy_draft_vocab_size = 0;        // V_g < V_d for greedy requests; 0 = none
  bool sample_from_anchor = true;             // anchor slot predicts: γ drafts, else γ−1
  int64_t markov_rank = 0;                    // 0 = no Markov head
  std::string markov_head_type = "vanilla";   // "vanilla" | "contextual"
  int64_t markov_context_size = 0;            // the contextual head's MLP width; 0 otherwise
  bool enable_confidence_head = false;
  bool confidence_head_with_markov = false;   // confidence sees [h_j ; W₁[x_{j−1}]]
  std::vector<float> confidence_temperatures; // [num_drafts()] or empty (all 1)
  std::vector<float> confidence_temperatures_sampled;  // [num_drafts()] or empty (the greedy ones)
  std::vector<float> confidence_repeat_shifts;  // [2] {disagree, agree} or empty (0, 0); greedy only
  int32_t speculative_tokens = 0;             // default drafts per round (speculators_config)
  // Matmul weights at load unless the command line names them: "" (as the target's),
  // "none", "int8" or "int4" (model/load_quantization.h reads it for the engine).
  std::string quantization;
  std::string verifier_name_or_path;
  std::vector<std::string> verifier_architectures;

  // The drafter drafts from V_d < V target tokens (spec/draft_vocab.h).
  bool reduces_vocab() const { return draft_vocab_size < layer.vocab_size; }
  // The Markov feature depends on h_j as well as x_{j−1}.
  bool contextual_markov() const { return markov_rank > 0 && markov_head_type == "contextual"; }
  // Drafts one pass can produce: γ with sample_from_anchor, else γ−1.
  int32_t num_drafts() const { return sample_from_anchor ? block_size : block_size - 1; }
  // The engine's capture layers, in fc column order.
  std::vector<int32_t> capture_layers() const;
  // T_j for draft j (0-based) of a greedy or a sampling request; 1 when uncalibrated.
  float confidence_temperature(int32_t j, bool sampled = false) const;
  // The logit shift of a greedy request's draft that agrees (or not) with the context's
  // repeat continuation; 0 when uncalibrated.
  float confidence_repeat_shift(bool agrees) const;

  static DrafterConfig from_json(const nlohmann::json& json, const std::string& source);
  // Reads DIR/config.json (or the file itself).
  static DrafterConfig from_file(const std::filesystem::path& path);
  // A config.json that from_json reads back identically. Checks the fields first.
  nlohmann::json to_json() const;
  // Internal consistency (what from_json enforces); throws naming `source` and the field.
  void validate(const std::string& source) const;
  // Fits the target? Throws naming the field and both values.
  void validate_for_target(const ModelConfig& target, const std::string& source) const;

  bool operator==(const DrafterConfig&) const = default;
};

// True when DIR/config.json exists and has a "speculators_model_type" field.
bool is_drafter_directory(const std::filesystem::path& dir);

}  // namespace dspark
