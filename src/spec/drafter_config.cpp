#include "spec/drafter_config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "model/load_quantization.h"
#include "loader/json_fields.h"

namespace dspark {

using nlohmann::json;

namespace {

// A reader of one object of a drafter config: it must be a JSON object, and its integers
// (ids, sizes, counts) are 32-bit.
JsonFields reader(const json& object, const std::string& source, std::string prefix = "") {
  DSPARK_CHECK(object.is_object(), "{}: {} must be a JSON object, got {}", source,
               prefix.empty() ? std::string("the config") : "field '" + prefix.substr(0, prefix.size() - 1) + "'",
               describe_json(object));
  return JsonFields(object, source, std::move(prefix), JsonFields::IntRange::kInt32);
}

std::string_view kind_name(DrafterKind kind) { return kind == DrafterKind::kDSpark ? "dspark" : "dflash"; }

DrafterKind parse_kind(const JsonFields& r) {
  const std::optional<std::string> type = r.get_string("speculators_model_type");
  DSPARK_CHECK(type, "{}: missing required field 'speculators_model_type' (\"dspark\" or \"dflash\")", r.source());
  if (*type == "dspark") return DrafterKind::kDSpark;
  if (*type == "dflash") return DrafterKind::kDFlash;
  DSPARK_FAIL("{}: speculators_model_type '{}' is not a block drafter this engine runs (supported: dspark, dflash)",
              r.source(), *type);
}

// Architecture names that identify each kind.
std::optional<DrafterKind> kind_of_architecture(const std::string& name) {
  if (name == "DSparkDraftModel" || name == "DSparkSpeculator") return DrafterKind::kDSpark;
  if (name == "DFlashDraftModel" || name == "DFlashSpeculator") return DrafterKind::kDFlash;
  return std::nullopt;
}

void parse_speculators_config(const json& object, DrafterConfig& c, const std::string& source) {
  const JsonFields r = reader(object, source, "speculators_config.");
  if (const auto algorithm = r.get_string("algorithm")) {
    DSPARK_CHECK(*algorithm == kind_name(c.kind),
                 "{}: speculators_config.algorithm '{}' disagrees with speculators_model_type '{}'", source,
                 *algorithm, kind_name(c.kind));
  }
  const std::string method = r.get_string("default_proposal_method").value_or("greedy");
  const json* methods = r.find("proposal_methods");
  c.speculative_tokens = c.num_drafts();
  if (methods) {
    DSPARK_CHECK(methods->is_array(), "{}: field 'speculators_config.proposal_methods' must be a list, got {}",
                 source, describe_json(*methods));
    bool found = false;
    for (const json& m : *methods) {
      const JsonFields mr = reader(m, source, "speculators_config.proposal_methods[].");
      const std::optional<std::string> type = mr.get_string("proposal_type");
      DSPARK_CHECK(type, "{}: a speculators_config.proposal_methods entry has no 'proposal_type'", source);
      if (*type != method) continue;
      found = true;
      c.speculative_tokens = static_cast<int32_t>(mr.get_int("speculative_tokens", c.num_drafts()));
    }
    DSPARK_CHECK(found || methods->empty(),
                 "{}: speculators_config.default_proposal_method '{}' is not among proposal_methods", source, method);
  }
  DSPARK_CHECK(method == "greedy", "{}: speculators_config.default_proposal_method '{}' is not supported (only greedy)",
               source, method);
  if (const json* verifier = r.find("verifier")) {
    const JsonFields vr = reader(*verifier, source, "speculators_config.verifier.");
    c.verifier_name_or_path = vr.get_string("name_or_path").value_or("");
    c.verifier_architectures = vr.get_strings("architectures");
  }
}

}  // namespace

int32_t aux_layer_id_to_capture_layer(int32_t aux_layer_id) { return aux_layer_id - 1; }
int32_t capture_layer_to_aux_layer_id(int32_t capture_layer) { return capture_layer + 1; }

std::vector<int32_t> DrafterConfig::capture_layers() const {
  std::vector<int32_t> out;
  out.reserve(aux_hidden_state_layer_ids.size());
  for (int32_t id : aux_hidden_state_layer_ids) out.push_back(aux_layer_id_to_capture_layer(id));
  return out;
}

float DrafterConfig::confidence_temperature(int32_t j, bool sampled) const {
  const std::vector<float>& t =
      sampled && !confidence_temperatures_sampled.empty() ? confidence_temperatures_sampled : confidence_temperatures;
  return j < static_cast<int32_t>(t.size()) ? t[j] : 1.0f;
}

float DrafterConfig::confidence_repeat_shift(bool agrees) const {
  return confidence_repeat_shifts.empty() ? 0.0f : confidence_repeat_shifts[agrees ? 1 : 0];
}

DrafterConfig DrafterConfig::from_json(const json& root, const std::string& source) {
  const JsonFields r = reader(root, source);
  DrafterConfig c;
  c.kind = parse_kind(r);
  const std::vector<std::string> architectures = r.get_strings("architectures");
  c.architecture = c.kind == DrafterKind::kDSpark ? "DSparkDraftModel" : "DFlashDraftModel";
  if (!architectures.empty()) {
    const std::optional<DrafterKind> k = kind_of_architecture(architectures.front());
    DSPARK_CHECK(k, "{}: architectures '{}' is not a supported drafter (DSparkDraftModel, DFlashDraftModel)", source,
                 architectures.front());
    DSPARK_CHECK(*k == c.kind, "{}: architectures '{}' disagrees with speculators_model_type '{}'", source,
                 architectures.front(), kind_name(c.kind));
    c.architecture = architectures.front();
  }
  c.layer = ModelConfig::from_json(r.require("transformer_layer_config", "the draft layers' config"),
                                   source + " (transformer_layer_config)");
  c.block_size = static_cast<int32_t>(r.get_int("block_size"));
  for (const int64_t id : r.get_ints("aux_hidden_state_layer_ids")) {
    c.aux_hidden_state_layer_ids.push_back(static_cast<int32_t>(id));
  }
  c.mask_token_id = static_cast<int32_t>(r.get_int("mask_token_id"));
  c.target_hidden_size = r.get_int("target_hidden_size", c.layer.hidden_size);
  c.draft_vocab_size = r.get_int("draft_vocab_size", c.layer.vocab_size);
  c.greedy_draft_vocab_size = r.get_int("greedy_draft_vocab_size", 0);
  c.sample_from_anchor = r.get_bool("sample_from_anchor", c.kind == DrafterKind::kDSpark);
  c.markov_rank = r.get_int("markov_rank", 0);
  c.markov_head_type = r.get_string("markov_head_type").value_or("vanilla");
  c.markov_context_size = r.get_int("markov_context_size", 0);
  c.enable_confidence_head = r.get_bool("enable_confidence_head", false);
  c.confidence_head_with_markov = c.enable_confidence_head && r.get_bool("confidence_head_with_markov", false);
  for (const double t : r.get_numbers("confidence_temperatures")) {
    c.confidence_temperatures.push_back(static_cast<float>(t));
  }
  for (const double t : r.get_numbers("confidence_temperatures_sampled")) {
    c.confidence_temperatures_sampled.push_back(static_cast<float>(t));
  }
  for (const double t : r.get_numbers("confidence_repeat_shifts")) {
    c.confidence_repeat_shifts.push_back(static_cast<float>(t));
  }
  c.quantization = r.get_string("quantization").value_or("");
  DSPARK_CHECK(c.block_size >= 1, "{}: field 'block_size' must be positive, got {}", source, c.block_size);
  c.speculative_tokens = c.num_drafts();
  if (const json* sc = r.find("speculators_config")) parse_speculators_config(*sc, c, source);
  c.validate(source);
  return c;
}

DrafterConfig DrafterConfig::from_file(const std::filesystem::path& path) {
  const JsonFile file = read_json_config(path, "drafter config");
  return from_json(file.root, file.source);
}

void DrafterConfig::validate(const std::string& source) const {
  DSPARK_CHECK(block_size >= 1, "{}: field 'block_size' must be positive, got {}", source, block_size);
  DSPARK_CHECK(num_drafts() >= 1, "{}: block_size {} leaves no draft position (the anchor slot does not predict)",
               source, block_size);
  DSPARK_CHECK(!aux_hidden_state_layer_ids.empty(), "{}: field 'aux_hidden_state_layer_ids' is empty", source);
  std::set<int32_t> seen;
  for (int32_t id : aux_hidden_state_layer_ids) {
    DSPARK_CHECK(id >= 1,
                 "{}: aux_hidden_state_layer_ids entry {} is not supported: ids count decoder layers (id k = output "
                 "of decoder layer k-1, 1-based), and 0 (the embeddings) is not captured",
                 source, id);
    DSPARK_CHECK(seen.insert(id).second, "{}: aux_hidden_state_layer_ids repeats {}", source, id);
  }
  DSPARK_CHECK(mask_token_id >= 0, "{}: field 'mask_token_id' must be >= 0, got {}", source, mask_token_id);
  DSPARK_CHECK(target_hidden_size > 0, "{}: field 'target_hidden_size' must be positive, got {}", source,
               target_hidden_size);
  DSPARK_CHECK(draft_vocab_size > 0 && draft_vocab_size <= layer.vocab_size,
               "{}: field 'draft_vocab_size' is {}; it must be within 1..{} (transformer_layer_config.vocab_size)",
               source, draft_vocab_size, layer.vocab_size);
  DSPARK_CHECK(greedy_draft_vocab_size >= 0 && greedy_draft_vocab_size < draft_vocab_size,
               "{}: field 'greedy_draft_vocab_size' is {}; it must be within 0..{} (0: none; less than "
               "draft_vocab_size)",
               source, greedy_draft_vocab_size, draft_vocab_size - 1);
  DSPARK_CHECK(markov_rank >= 0, "{}: field 'markov_rank' must be >= 0, got {}", source, markov_rank);
  DSPARK_CHECK(markov_rank == 0 || markov_head_type == "vanilla" || markov_head_type == "contextual",
               "{}: markov_head_type '{}' is not supported (vanilla or contextual)", source, markov_head_type);
  DSPARK_CHECK(markov_context_size >= 0, "{}: field 'markov_context_size' must be >= 0, got {}", source,
               markov_context_size);
  DSPARK_CHECK(!contextual_markov() || markov_context_size > 0,
               "{}: markov_head_type 'contextual' needs a positive 'markov_context_size' (its MLP width)", source);
  DSPARK_CHECK(contextual_markov() || markov_context_size == 0,
               "{}: field 'markov_context_size' is {} but the Markov head is not contextual (markov_head_type '{}', "
               "markov_rank {})",
               source, markov_context_size, markov_head_type, markov_rank);
  DSPARK_CHECK(!confidence_head_with_markov || enable_confidence_head,
               "{}: confidence_head_with_markov is set but enable_confidence_head is false", source);
  DSPARK_CHECK(!confidence_head_with_markov || markov_rank > 0,
               "{}: confidence_head_with_markov needs a Markov head, but markov_rank is 0", source);
  for (const auto& [field, temps] : {std::pair<const char*, const std::vector<float>*>{"confidence_temperatures",
                                                                                    &confidence_temperatures},
                                     {"confidence_temperatures_sampled", &confidence_temperatures_sampled}}) {
    DSPARK_CHECK(temps->empty() || static_cast<int32_t>(temps->size()) == num_drafts(),
                 "{}: field '{}' has {} entries; the drafter makes {} drafts per block", source, field, temps->size(),
                 num_drafts());
    for (float t : *temps) {
      DSPARK_CHECK(std::isfinite(t) && t > 0, "{}: {} entry {} must be a positive number", source, field, t);
    }
    DSPARK_CHECK(temps->empty() || enable_confidence_head, "{}: {} given but enable_confidence_head is false",
                 source, field);
  }
  DSPARK_CHECK(confidence_repeat_shifts.empty() || confidence_repeat_shifts.size() == 2,
               "{}: field 'confidence_repeat_shifts' has {} entries; it takes 2 (disagree, agree)", source,
               confidence_repeat_shifts.size());
  for (float v : confidence_repeat_shifts) {
    DSPARK_CHECK(std::isfinite(v), "{}: confidence_repeat_shifts entry {} must be finite", source, v);
  }
  DSPARK_CHECK(confidence_repeat_shifts.empty() || enable_confidence_head,
               "{}: confidence_repeat_shifts given but enable_confidence_head is false", source);
  check_configured_quantization(quantization, source);
  DSPARK_CHECK(speculative_tokens >= 1 && speculative_tokens <= num_drafts(),
               "{}: speculators_config speculative_tokens {} must be within 1..{} (the drafts of one block)", source,
               speculative_tokens, num_drafts());
}

void DrafterConfig::validate_for_target(const ModelConfig& target, const std::string& source) const {
  DSPARK_CHECK(target_hidden_size == target.hidden_size,
               "{}: target_hidden_size is {} but the target's hidden_size is {}", source, target_hidden_size,
               target.hidden_size);
  DSPARK_CHECK(layer.vocab_size == target.vocab_size,
               "{}: transformer_layer_config.vocab_size is {} but the target's vocab_size is {}", source,
               layer.vocab_size, target.vocab_size);
  for (int32_t id : aux_hidden_state_layer_ids) {
    DSPARK_CHECK(id >= 1 && id <= target.num_hidden_layers,
                 "{}: aux_hidden_state_layer_ids entry {} is outside 1..{} (the target has {} decoder layers; id k "
                 "is the output of decoder layer k-1)",
                 source, id, target.num_hidden_layers, target.num_hidden_layers);
  }
  DSPARK_CHECK(mask_token_id < target.vocab_size,
               "{}: mask_token_id is {} but the target's vocabulary has {} tokens (ids 0..{})", source, mask_token_id,
               target.vocab_size, target.vocab_size - 1);
}

json DrafterConfig::to_json() const {
  validate("DrafterConfig::to_json");
  json j;
  j["architectures"] = json::array({architecture});
  j["speculators_model_type"] = std::string(kind_name(kind));
  j["transformer_layer_config"] = layer.to_json();
  j["block_size"] = block_size;
  j["aux_hidden_state_layer_ids"] = aux_hidden_state_layer_ids;
  j["mask_token_id"] = mask_token_id;
  j["target_hidden_size"] = target_hidden_size;
  j["draft_vocab_size"] = draft_vocab_size;
  if (greedy_draft_vocab_size > 0) j["greedy_draft_vocab_size"] = greedy_draft_vocab_size;
  j["sample_from_anchor"] = sample_from_anchor;
  j["markov_rank"] = markov_rank;
  j["markov_head_type"] = markov_head_type;
  if (contextual_markov()) j["markov_context_size"] = markov_context_size;
  j["enable_confidence_head"] = enable_confidence_head;
  j["confidence_head_with_markov"] = confidence_head_with_markov;
  for (const auto& [field, values] :
       {std::pair<const char*, const std::vector<float>*>{"confidence_temperatures", &confidence_temperatures},
        {"confidence_temperatures_sampled", &confidence_temperatures_sampled},
        {"confidence_repeat_shifts", &confidence_repeat_shifts}}) {
    if (values->empty()) continue;
    json a = json::array();
    for (float v : *values) a.push_back(float_for_json(v));
    j[field] = a;
  }
  if (!quantization.empty()) j["quantization"] = quantization;
  j["speculators_config"] = {
      {"algorithm", std::string(kind_name(kind))},
      {"proposal_methods", json::array({{{"proposal_type", "greedy"}, {"speculative_tokens", speculative_tokens}}})},
      {"default_proposal_method", "greedy"},
      {"verifier", {{"name_or_path", verifier_name_or_path}, {"architectures", verifier_architectures}}}};
  return j;
}

bool is_drafter_directory(const std::filesystem::path& dir) {
  const std::filesystem::path file = dir / "config.json";
  if (!std::filesystem::is_regular_file(file)) return false;
  std::ifstream in(file);
  const json root = json::parse(in, nullptr, /*allow_exceptions=*/false);
  return root.is_object() && root.contains("speculators_model_type");
}

}  // namespace dspark
