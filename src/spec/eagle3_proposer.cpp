#include "spec/eagle3_proposer.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include "core/check.h"
#include "kernels/norm.h"
#include "model/fused_linear.h"
#include "model/rope_frequencies.h"
#include "spec/draft_vocab.h"
#include "spec/drafter_memory.h"

namespace dspark {
namespace {

void check_tensors(const Eagle3Config& c, const WeightStore& store) {
  std::set<std::string> known = {"d2t", "t2d"};
  for (const Eagle3Tensor& t : eagle3_tensors(c)) {
    known.insert(t.name);
    if (!store.contains(t.name)) {
      DSPARK_CHECK(t.optional, "EAGLE-3 drafter {} has no tensor '{}' (shape {}), which its config requires",
                   store.dir().string(), t.name, format_shape(t.shape));
      continue;
    }
    const TensorInfo& info = store.get(t.name);
    DSPARK_CHECK(info.shape == t.shape, "EAGLE-3 drafter {}: tensor '{}' has shape {} but the config implies {}",
                 store.dir().string(), t.name, format_shape(info.shape), format_shape(t.shape));
  }
  for (const std::string& name : store.names()) {
    if (name.ends_with("rotary_emb.inv_freq")) continue;  // a buffer some exports carry; recomputed here
    DSPARK_CHECK(known.contains(name), "EAGLE-3 drafter {} has tensor '{}', which its config does not describe",
                 store.dir().string(), name);
  }
}

const Eagle3Config& check_config(const Eagle3Config& c, const WeightStore& store, const ModelConfig& target,
                                 const Eagle3ProposerOptions& options) {
  options.validate();
  const std::string source = (store.dir() / "config.json").string();
  c.validate(source);
  c.validate_for_target(target, source);
  check_tensors(c, store);
  DSPARK_CHECK(store.contains("embed_tokens.weight") || c.layer.hidden_size == target.hidden_size,
               "{}: the drafter's hidden_size is {} but the target's is {}; a drafter without its own embed_tokens "
               "uses the target's, so they must agree", source, c.layer.hidden_size, target.hidden_size);
  return c;
}

KvPoolOptions kv_options(const Eagle3ProposerOptions& o, int64_t drafts) {
  KvPoolOptions kv;
  kv.block_size = o.kv_block_size;
  kv.num_blocks = drafter_kv_blocks(o.max_running, o.max_model_len, o.context_window, drafts, o.kv_block_size);
  kv.dtype = o.kv_dtype;
  return kv;
}

}  // namespace

void Eagle3ProposerOptions::validate() const {
  DSPARK_CHECK(num_speculative_tokens >= 0, "num_speculative_tokens must be >= 0, got {}", num_speculative_tokens);
  DSPARK_CHECK(max_running >= 1, "max_running must be >= 1, got {}", max_running);
  DSPARK_CHECK(max_model_len >= 1, "max_model_len must be >= 1, got {}", max_model_len);
  DSPARK_CHECK(max_context_rows >= 1, "max_context_rows must be >= 1, got {}", max_context_rows);
  DSPARK_CHECK(max_pending_positions >= -1, "max_pending_positions must be >= -1, got {}", max_pending_positions);
  DSPARK_CHECK(kv_block_size >= 1, "kv_block_size must be >= 1, got {}", kv_block_size);
  DSPARK_CHECK(context_window >= 0, "context_window must be >= 0, got {}", context_window);
  DSPARK_CHECK(compute == DType::kBF16 || compute == DType::kF32, "compute dtype must be bf16 or f32, got {}",
               dtype_name(compute));
}

Eagle3Proposer::Eagle3Proposer(Eagle3Config config, const WeightStore& store, const Transformer& target,
                               const Eagle3ProposerOptions& options)
    : config_((check_config(config, store, target.config(), options), std::move(config))),
      options_(options),
      capture_layers_(config_.capture_layers(target.config().num_hidden_layers)),
      num_speculative_tokens_(options.num_speculative_tokens > 0 ? options.num_speculative_tokens
                                                                 : config_.speculative_tokens),
      hidden_(config_.layer.hidden_size),
      vocab_(config_.layer.vocab_size),
      draft_vocab_(config_.draft_vocab_size),
      fc_in_(3 * config_.target_hidden_size),
      max_rows_(std::max(options.max_context_rows, options.max_running)),
      embedding_(store.contains("embed_tokens.weight")
                     ? std::make_shared<const EmbeddingTable>(
                           store.load_f32("embed_tokens.weight", std::vector<int64_t>{vocab_, hidden_}), vocab_,
                           hidden_, options.compute)
                     : target.embedding()),
      fc_([&] {
        const int64_t shape[2] = {hidden_, fc_in_};
        return Linear(store.load_f32("fc.weight", shape), hidden_, fc_in_, {},
                      LinearOptions{options_.compute, max_rows_, LinearBackend::kAuto, options_.quantization});
      }()),
      hidden_norm_(load_vector(store, config_.layer_prefix() + "hidden_norm.weight", hidden_)),
      final_norm_(load_vector(store, "norm.weight", hidden_)),
      layer_(config_.layer, store, config_.layer_prefix(),
             LinearOptions{options_.compute, max_rows_, LinearBackend::kAuto, options_.quantization},
             options_.context_window, 2 * hidden_),
      lm_head_([&] {
        const int64_t shape[2] = {draft_vocab_, hidden_};
        return Linear(store.load_f32("lm_head.weight", shape), draft_vocab_, hidden_, {},
                      LinearOptions{options_.compute, options_.max_running, LinearBackend::kAuto,
                                    options_.quantization});
      }()),
      draft_to_target_(read_draft_to_target(store, "", config_.draft_vocab_size, config_.layer.vocab_size, "EAGLE-3")),
      to_target_ascending_(std::is_sorted(draft_to_target_.begin(), draft_to_target_.end())),
      rope_(rope_inverse_frequencies(config_.layer), options_.max_model_len + num_speculative_tokens_,
            rope_attention_factor(config_.layer)),
      kv_(config_.layer, kv_options(options_, num_speculative_tokens_)),
      allocator_(kv_.num_blocks()),
      logits_processor_(vocab_),
      workspace_(config_.layer, max_rows_),
      slots_(options_.max_running),
      max_pending_(pending_positions_per_slot(options_.max_pending_positions, options_.max_running,
                                              options_.max_model_len, fc_in_)),
      pending_(max_pending_ > 0 ? new float[options_.max_running * max_pending_ * fc_in_] : nullptr),
      features_(options_.max_context_rows * fc_in_),
      x_(max_rows_ * hidden_),
      normed_(max_rows_ * 2 * hidden_),
      tokens_(max_rows_),
      positions_(max_rows_),
      seq_of_row_(max_rows_),
      num_keys_(max_rows_),
      row_slots_(max_rows_),
      block_tables_(max_rows_),
      row_slot_index_(max_rows_),
      chain_(options_.max_running * hidden_),
      lm_in_(options_.max_running * hidden_),
      logits_(options_.max_running * draft_vocab_),
      target_logits_(vocab_),
      active_of_request_(options_.max_running, -1),
      tails_(options_.max_running) {
  for (size_t i = 0; i < slots_.size(); ++i) {
    SlotState& s = slots_[i];
    if (pending_) s.pending = pending_.get() + static_cast<int64_t>(i) * max_pending_ * fc_in_;
    s.last_output.resize(hidden_);
    s.drafts.reserve(num_speculative_tokens_);
    s.probs.resize(static_cast<size_t>(num_speculative_tokens_) * vocab_);
    s.logits.resize(static_cast<size_t>(num_speculative_tokens_) * draft_vocab_);
  }
  active_.reserve(options_.max_running);
  history_.reserve(options_.max_model_len + num_speculative_tokens_);
}

Eagle3Proposer::~Eagle3Proposer() = default;

std::unique_ptr<Eagle3Proposer> Eagle3Proposer::load(const std::filesystem::path& drafter_dir,
                                                     const std::filesystem::path& target_dir,
                                                     const Eagle3ProposerOptions& options) {
  DSPARK_CHECK(std::filesystem::is_directory(drafter_dir), "drafter directory {} does not exist", drafter_dir.string());
  Eagle3Config config = Eagle3Config::from_file(drafter_dir);
  const auto target = load_target_for_drafter(target_dir, options.compute, options.quantization);
  const WeightStore store(drafter_dir);
  return std::make_unique<Eagle3Proposer>(std::move(config), store, *target, options);
}

ProposerCapabilities Eagle3Proposer::capabilities() const {
  ProposerCapabilities c;
  c.needs_target_hidden_states = true;
  c.owns_kv_cache = true;
  c.provides_draft_probs = true;
  c.drafter_cost = DrafterCostShape::kPerDraft;
  return c;
}

size_t Eagle3Proposer::weight_bytes() const { return layer_.weight_bytes() + lm_head_.weight_bytes(); }

void Eagle3Proposer::release(int32_t slot) {
  SlotState& s = slots_[slot];
  s.blocks.release_all(allocator_);
  s.num_observed = 0;
  s.num_pending = 0;
  s.tail_waits = false;
  s.drafts.clear();
}

int32_t Eagle3Proposer::first_visible(int32_t end) const {
  if (options_.context_window <= 0) return 0;
  return std::max<int32_t>(0, end - static_cast<int32_t>(options_.context_window));
}

void Eagle3Proposer::stage_row(int64_t row, int32_t token, int32_t position, const BlockTable& blocks) {
  tokens_[row] = token;
  positions_[row] = position;
  row_slots_[row] = slot_of(blocks, position, kv_.block_size());
}

void Eagle3Proposer::norm_inputs(int64_t rows) {
  const float eps = config_.layer.rms_norm_eps;
  for (int64_t i = 0; i < rows; ++i) {
    float* e = normed_.data() + i * 2 * hidden_;  // [embedding | hidden]
    float* g = x_.data() + i * hidden_;
    embedding_->lookup(tokens_[i], e);
    rms_norm(e, layer_.input_norm_weight().data(), e, 1, hidden_, eps);
    rms_norm(g, hidden_norm_.data(), e + hidden_, 1, hidden_, eps);
    if (config_.norm_before_residual) std::memcpy(g, e + hidden_, hidden_ * sizeof(float));
  }
}

void Eagle3Proposer::write_context(int64_t rows) {
  fc_.forward(features_.data(), x_.data(), rows);
  // A slot's last row keeps its features g until the request drafts (catch_up).
  for (int32_t t = 0; t < num_tails_; ++t) {
    SlotState& s = slots_[tails_[t].slot];
    std::memcpy(s.last_output.data(), x_.data() + static_cast<int64_t>(tails_[t].row) * hidden_, hidden_ * sizeof(float));
    s.tail_waits = true;
  }
  num_tails_ = 0;
  norm_inputs(rows);
  layer_.write_keys_values(normed_.data(), rows, positions_.data(), row_slots_.data(), rope_, kv_.layer(0), workspace_);
}

void Eagle3Proposer::run_layer(int64_t rows) {
  norm_inputs(rows);
  LayerStepContext step;
  step.num_tokens = rows;
  step.positions = positions_.data();
  step.seq_of_token = seq_of_row_.data();
  step.num_keys = num_keys_.data();
  step.slots = row_slots_.data();
  step.block_tables = block_tables_.data();
  step.rope = &rope_;
  layer_.forward_normed(x_.data(), normed_.data(), step, kv_.layer(0), workspace_);
}

void Eagle3Proposer::run_head(int64_t rows) {
  rms_norm(lm_in_.data(), final_norm_.data(), lm_in_.data(), rows, hidden_, config_.layer.rms_norm_eps);
  lm_head_.forward(lm_in_.data(), logits_.data(), rows);
}

void Eagle3Proposer::copy_features(const CommittedHiddenStates& c, int32_t i, float* dst) const {
  const int64_t width = config_.target_hidden_size;
  for (int64_t l = 0; l < 3; ++l) {
    std::memcpy(dst + l * width, c.hidden + l * c.layer_stride + static_cast<int64_t>(i) * c.hidden_size,
                width * sizeof(float));
  }
}

void Eagle3Proposer::observe(std::span<const CommittedHiddenStates> committed) {
  // Every row contributes its K/V, which depend on the row alone: no attention, no MLP.
  // Only the last row of a slot needs its output r (the first draft comes from it); its
  // features g wait in the slot until the request drafts (catch_up). With a pending buffer
  // even the K/V wait: a request that does not draft this step costs a copy per position.
  for (const CommittedHiddenStates& c : committed) {
    DSPARK_CHECK(c.slot >= 0 && c.slot < static_cast<int32_t>(slots_.size()), "slot {} outside 0..{}", c.slot,
                 slots_.size() - 1);
    DSPARK_CHECK(c.hidden_size == config_.target_hidden_size,
                 "committed hidden states are {} wide; the drafter expects {}", c.hidden_size,
                 config_.target_hidden_size);
    DSPARK_CHECK(static_cast<int64_t>(c.tokens.size()) > c.start_position + c.num_positions,
                 "slot {}: the token after position {} is not known (committed states must come with the tokens "
                 "that follow them)", c.slot, c.start_position + c.num_positions - 1);
  }
  int64_t rows = 0;
  num_tails_ = 0;
  for (const CommittedHiddenStates& c : committed) {
    SlotState& s = slots_[c.slot];
    DSPARK_CHECK(c.start_position == s.num_observed,
                 "slot {}: committed hidden states start at position {} but {} positions were seen (they must arrive "
                 "in order, without gaps)", c.slot, c.start_position, s.num_observed);
    if (c.num_positions <= 0) continue;
    const int32_t end = c.start_position + c.num_positions;
    DSPARK_CHECK(end <= options_.max_model_len, "slot {}: position {} passes the context {}", c.slot, end - 1,
                 options_.max_model_len);
    if (max_pending_ > 0) {
      for (int32_t i = 0; i < c.num_positions; ++i) {
        if (s.num_pending == max_pending_) rows = stage_pending(c.slot, c.tokens, rows);  // full: write now
        copy_features(c, i, s.pending + static_cast<int64_t>(s.num_pending) * fc_in_);
        ++s.num_pending;
        ++s.num_observed;
      }
      continue;
    }
    DSPARK_CHECK(s.blocks.reserve_window(first_visible(end), end, kv_.block_size(), allocator_),
                 "drafter KV cache exhausted");
    for (int32_t p = std::max(c.start_position, first_visible(end)); p < end; ++p) {
      if (rows == options_.max_context_rows) {
        write_context(rows);
        rows = 0;
      }
      copy_features(c, p - c.start_position, features_.data() + rows * fc_in_);
      stage_row(rows, c.tokens[p + 1], p, s.blocks);
      if (p == end - 1) set_tail(c.slot, rows, c.tokens[p + 1]);
      ++rows;
    }
    s.num_observed = end;
  }
  if (rows > 0) write_context(rows);
}

int64_t Eagle3Proposer::stage_pending(int32_t slot, std::span<const int32_t> tokens, int64_t rows) {
  SlotState& s = slots_[slot];
  DSPARK_CHECK(static_cast<int64_t>(tokens.size()) > s.num_observed,
               "slot {}: {} positions were observed but only {} tokens are known", slot, s.num_observed, tokens.size());
  const int32_t first = s.num_observed - s.num_pending;
  const int32_t visible = first_visible(s.num_observed);
  DSPARK_CHECK(s.blocks.reserve_window(visible, s.num_observed, kv_.block_size(), allocator_),
               "drafter KV cache exhausted");
  for (int32_t i = std::max(0, visible - first); i < s.num_pending; ++i) {
    if (rows == options_.max_context_rows) {
      write_context(rows);
      rows = 0;
    }
    const int32_t p = first + i;
    std::memcpy(features_.data() + rows * fc_in_, s.pending + static_cast<int64_t>(i) * fc_in_,
                fc_in_ * sizeof(float));
    stage_row(rows, tokens[p + 1], p, s.blocks);
    if (p == s.num_observed - 1) set_tail(slot, rows, tokens[p + 1]);
    ++rows;
  }
  s.num_pending = 0;
  return rows;
}

void Eagle3Proposer::set_tail(int32_t slot, int64_t row, int32_t token) {
  slots_[slot].tail_token = token;
  for (int32_t t = 0; t < num_tails_; ++t) {
    if (tails_[t].slot == slot) {  // a later row of the same slot in this pass
      tails_[t].row = static_cast<int32_t>(row);
      return;
    }
  }
  tails_[num_tails_++] = {static_cast<int32_t>(row), slot};
}

void Eagle3Proposer::catch_up(std::span<const DraftRequest> requests) {
  // First the pending context rows of the requests about to draft (their K/V, and their
  // last rows' g); then the full layer over those last rows, whose outputs start drafting.
  int64_t rows = 0;
  num_tails_ = 0;
  for (const DraftRequest& r : requests) {
    DSPARK_CHECK(r.slot >= 0 && r.slot < static_cast<int32_t>(slots_.size()), "slot {} outside 0..{}", r.slot,
                 slots_.size() - 1);
    if (r.max_drafts > 0 && slots_[r.slot].num_pending > 0) rows = stage_pending(r.slot, r.tokens, rows);
  }
  if (rows > 0) write_context(rows);
  // The last rows' K/V are in the cache already (rewritten with the same values).
  rows = 0;
  for (const DraftRequest& r : requests) {
    SlotState& s = slots_[r.slot];
    if (r.max_drafts <= 0 || !s.tail_waits) continue;
    const int32_t p = s.num_observed - 1;
    std::memcpy(x_.data() + rows * hidden_, s.last_output.data(), hidden_ * sizeof(float));  // g
    stage_row(rows, s.tail_token, p, s.blocks);
    seq_of_row_[rows] = static_cast<int32_t>(rows);
    num_keys_[rows] = p + 1;
    block_tables_[rows] = s.blocks.data();
    row_slot_index_[rows] = r.slot;
    ++rows;
  }
  if (rows == 0) return;
  run_layer(rows);
  for (int64_t i = 0; i < rows; ++i) {
    SlotState& s = slots_[row_slot_index_[i]];
    std::memcpy(s.last_output.data(), x_.data() + i * hidden_, hidden_ * sizeof(float));
    s.tail_waits = false;
  }
}

int32_t Eagle3Proposer::draw(const DraftRequest& r, SlotState& s, const float* logits) {
  const int32_t j = static_cast<int32_t>(s.drafts.size());
  std::memcpy(s.logits.data() + static_cast<int64_t>(j) * draft_vocab_, logits, draft_vocab_ * sizeof(float));
  if (drafts_argmax(*r.sampling) && !r.grammar) {
    if (const int32_t token = greedy_draft_token(logits, draft_vocab_, draft_to_target_, to_target_ascending_);
        token >= 0) {
      s.drafts.push_back(token);
      return token;
    }
  }
  std::fill(target_logits_.begin(), target_logits_.end(), -std::numeric_limits<float>::infinity());
  scatter_draft_logits(draft_to_target_, logits, target_logits_.data());
  // A grammar-bound request drafts among the tokens its grammar allows (none left: no draft).
  if (r.grammar && !grammar_bound_row(r, s.drafts, target_logits_.data(), target_logits_.data(), vocab_)) return -1;
  int32_t token = drafts_argmax(*r.sampling) ? greedy_draft_token(target_logits_.data(), vocab_, {}, true) : -1;
  if (token < 0) {
    token = transform_and_draw(logits_processor_, target_logits_.data(),
                               s.probs.data() + static_cast<int64_t>(j) * vocab_, vocab_, r, s.drafts, history_);
  }
  s.drafts.push_back(token);
  return token;
}

void Eagle3Proposer::propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) {
  DSPARK_CHECK(requests.size() <= slots_.size(), "{} requests but only {} drafter slots", requests.size(),
               slots_.size());
  catch_up(requests);
  active_.clear();
  std::fill(active_of_request_.begin(), active_of_request_.end(), -1);
  int32_t longest = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const DraftRequest& r = requests[i];
    drafts[i] = Draft{};
    DSPARK_CHECK(r.slot >= 0 && r.slot < static_cast<int32_t>(slots_.size()), "slot {} outside 0..{}", r.slot,
                 slots_.size() - 1);
    SlotState& s = slots_[r.slot];
    s.drafts.clear();
    if (r.max_drafts <= 0) continue;
    const int32_t context = static_cast<int32_t>(r.tokens.size()) - 1;  // the last token has no target state yet
    DSPARK_CHECK(context >= 1, "slot {}: EAGLE-3 drafts from the target's state of the token before the last, and "
                 "this request has only {} token(s)", r.slot, r.tokens.size());
    DSPARK_CHECK(s.num_observed == context,
                 "slot {}: the drafter saw the hidden states of {} positions but {} tokens precede the last", r.slot,
                 s.num_observed, context);
    const int32_t num_drafts = std::min(r.max_drafts, num_speculative_tokens_);
    const int32_t end = context + num_drafts - 1;  // draft rows at positions context .. end − 1
    DSPARK_CHECK(end <= rope_.max_positions(), "slot {}: drafts at position {} pass the context {}", r.slot, end - 1,
                 options_.max_model_len);
    // The first draft row (position `context`) reads back furthest.
    DSPARK_CHECK(s.blocks.reserve_window(first_visible(context + 1), end, kv_.block_size(), allocator_),
                 "drafter KV cache exhausted");
    const int32_t a = static_cast<int32_t>(active_.size());
    active_.push_back({static_cast<int32_t>(i), r.slot, num_drafts, context});
    active_of_request_[i] = a;
    longest = std::max(longest, num_drafts);
    std::memcpy(chain_.data() + a * hidden_, s.last_output.data(), hidden_ * sizeof(float));
  }
  if (active_.empty()) return;

  for (int32_t j = 0; j < longest; ++j) {
    // Draft j + 1 from each chain's latest output r; then, if more are wanted, one layer
    // pass that feeds draft j + 1 back at the next position.
    int64_t rows = 0;
    for (size_t a = 0; a < active_.size(); ++a) {
      if (active_[a].num_drafts <= j) continue;
      std::memcpy(lm_in_.data() + rows * hidden_, chain_.data() + a * hidden_, hidden_ * sizeof(float));
      ++rows;
    }
    run_head(rows);
    rows = 0;
    for (size_t a = 0; a < active_.size(); ++a) {
      Active& act = active_[a];
      if (act.num_drafts <= j) continue;
      SlotState& s = slots_[act.slot];
      if (draw(requests[act.request], s, logits_.data() + rows * draft_vocab_) < 0) act.num_drafts = j;
      ++rows;
    }
    if (j + 1 == longest) break;
    rows = 0;
    for (size_t a = 0; a < active_.size(); ++a) {
      const Active& act = active_[a];
      if (act.num_drafts <= j + 1) continue;
      const SlotState& s = slots_[act.slot];
      const int32_t position = act.context + j;
      std::memcpy(x_.data() + rows * hidden_, chain_.data() + a * hidden_, hidden_ * sizeof(float));
      stage_row(rows, s.drafts[j], position, s.blocks);
      seq_of_row_[rows] = static_cast<int32_t>(rows);
      num_keys_[rows] = position + 1;
      block_tables_[rows] = s.blocks.data();
      row_slot_index_[rows] = static_cast<int32_t>(a);
      ++rows;
    }
    run_layer(rows);
    for (int64_t i = 0; i < rows; ++i) {
      std::memcpy(chain_.data() + row_slot_index_[i] * hidden_, x_.data() + i * hidden_, hidden_ * sizeof(float));
    }
  }
  for (const Active& act : active_) {
    const SlotState& s = slots_[act.slot];
    const float* q = drafts_argmax(*requests[act.request].sampling) ? nullptr : s.probs.data();
    drafts[act.request] = Draft{s.drafts, q, nullptr};
  }
}

std::span<const float> Eagle3Proposer::draft_logits(size_t request, int32_t j) const {
  if (request >= active_of_request_.size() || active_of_request_[request] < 0) return {};
  const SlotState& s = slots_[active_[active_of_request_[request]].slot];
  if (j < 0 || j >= static_cast<int32_t>(s.drafts.size())) return {};
  return {s.logits.data() + static_cast<int64_t>(j) * draft_vocab_, static_cast<size_t>(draft_vocab_)};
}

}  // namespace dspark
