#include "spec/dspark_proposer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/check.h"
#include "core/clock.h"
#include "kernels/norm.h"
#include "model/fused_linear.h"
#include "model/rope_frequencies.h"
#include "spec/draft_vocab.h"
#include "spec/drafter_memory.h"
#include "spec/drafter_tensors.h"

namespace dspark {
namespace {

bool shares_embedding(const WeightStore& drafter) { return !drafter.contains("embed_tokens.weight"); }
bool shares_lm_head(const WeightStore& drafter) { return !drafter.contains("lm_head.weight"); }

// Everything about the drafter directory that can be checked before loading: the config
// against the target, the presence of every tensor the config implies, and the absence of
// tensors that would mean the config does not describe these weights.
const DrafterConfig& check_drafter(const DrafterConfig& c, const WeightStore& drafter, const ModelConfig& target,
                                   const DSparkProposerOptions& options) {
  options.validate();
  const std::string source = (drafter.dir() / "config.json").string();
  c.validate(source);
  c.validate_for_target(target, source);
  for (const DrafterTensor& t : drafter_tensors(c)) {
    if (!drafter.contains(t.name)) {
      DSPARK_CHECK(t.optional, "drafter {} has no tensor '{}' (shape {}), which its config requires",
                   drafter.dir().string(), t.name, format_shape(t.shape));
      continue;
    }
    const TensorInfo& info = drafter.get(t.name);
    DSPARK_CHECK(info.shape == t.shape, "drafter {}: tensor '{}' has shape {} but the config implies {}",
                 drafter.dir().string(), t.name, format_shape(info.shape), format_shape(t.shape));
  }
  for (const std::string& name : drafter.names()) {
    DSPARK_CHECK(c.markov_rank > 0 || !name.starts_with("markov_head."),
                 "drafter {} has tensor '{}' but its config has markov_rank 0", drafter.dir().string(), name);
    DSPARK_CHECK(c.enable_confidence_head || !name.starts_with("confidence_head."),
                 "drafter {} has tensor '{}' but its config has enable_confidence_head false", drafter.dir().string(),
                 name);
    DSPARK_CHECK(c.greedy_draft_vocab_size > 0 || !name.starts_with("greedy_vocab."),
                 "drafter {} has tensor '{}' but its config has no greedy_draft_vocab_size", drafter.dir().string(),
                 name);
    DSPARK_CHECK(c.reduces_vocab() || (name != "d2t" && name != "t2d"),
                 "drafter {} has tensor '{}', a reduced draft vocabulary's map, but its draft_vocab_size {} is the whole "
                 "vocabulary", drafter.dir().string(), name, c.draft_vocab_size);
  }
  if (shares_embedding(drafter) || shares_lm_head(drafter)) {
    DSPARK_CHECK(c.layer.hidden_size == target.hidden_size,
                 "{}: transformer_layer_config.hidden_size is {} but the target's hidden_size is {}; a drafter that "
                 "shares the target's embeddings / LM head must have the target's width",
                 source, c.layer.hidden_size, target.hidden_size);
  }
  const int32_t k = options.num_speculative_tokens > 0 ? options.num_speculative_tokens : c.speculative_tokens;
  DSPARK_CHECK(k <= c.num_drafts(), "{} drafts per round were asked for, but the drafter {} makes {} per block", k,
               drafter.dir().string(), c.num_drafts());
  return c;
}

std::shared_ptr<const EmbeddingTable> drafter_embedding(const WeightStore& drafter, const Transformer& target,
                                                        int64_t hidden, DType compute) {
  if (shares_embedding(drafter)) return target.embedding();
  const int64_t vocab = target.config().vocab_size;
  const int64_t shape[2] = {vocab, hidden};
  return std::make_shared<const EmbeddingTable>(drafter.load_f32("embed_tokens.weight", shape), vocab, hidden, compute);
}

// The target's LM head through a view sized for the drafter's rows, or the drafter's own
// ([V_d, hidden]: a reduced vocabulary always has its own, check_drafter made sure).
Linear drafter_lm_head(const WeightStore& drafter, const Transformer& target, const DrafterConfig& c,
                       const LinearOptions& options) {
  if (shares_lm_head(drafter)) return target.lm_head().shared_view(options.max_rows);
  const int64_t shape[2] = {c.draft_vocab_size, c.layer.hidden_size};
  return Linear(drafter.load_f32("lm_head.weight", shape), shape[0], shape[1], {}, options);
}

// The output layer of the drafter's vocabulary (prefix "") or of its greedy one
// ("greedy_vocab."): LM head, Markov W₂ and target ids of its tokens.
DraftVocabHead make_vocab_head(const DrafterConfig& c, const WeightStore& drafter, const Transformer& target,
                               const std::string& prefix, const DSparkProposerOptions& o, int64_t max_rows) {
  const bool greedy = !prefix.empty();
  const int64_t size = greedy ? c.greedy_draft_vocab_size : c.draft_vocab_size, vocab = c.layer.vocab_size;
  const LinearOptions lm_options{o.compute, max_rows, LinearBackend::kAuto, o.quantization};
  Linear lm_head = [&] {
    if (!greedy) return drafter_lm_head(drafter, target, c, lm_options);
    const int64_t shape[2] = {size, c.layer.hidden_size};
    return Linear(drafter.load_f32(prefix + "lm_head.weight", shape), size, shape[1], {}, lm_options);
  }();
  std::unique_ptr<Linear> markov_w2;
  if (c.markov_rank > 0) {
    const int64_t shape[2] = {size, c.markov_rank};
    const std::string name = greedy ? prefix + "markov_w2.weight" : "markov_head.markov_w2.weight";
    markov_w2 = std::make_unique<Linear>(drafter.load_f32(name, shape), size, c.markov_rank, std::span<const float>{},
                                         LinearOptions{o.compute, o.max_running, LinearBackend::kAuto, o.quantization});
  }
  std::vector<int32_t> to_target;
  if (size < vocab) to_target = read_draft_to_target(drafter, prefix, size, vocab, "DSpark");
  return DraftVocabHead(std::move(lm_head), std::move(markov_w2), std::move(to_target), vocab, max_rows,
                        o.max_running, o.keep_base_logits);
}

KvPoolOptions kv_options(const DSparkProposerOptions& o, int64_t block) {
  KvPoolOptions kv;
  kv.block_size = o.kv_block_size;
  kv.num_blocks = drafter_kv_blocks(o.max_running, o.max_model_len, o.context_window, block, o.kv_block_size);
  kv.dtype = o.kv_dtype;
  return kv;
}

// Which kind of repeat lookup `num_drafts` drafts read from `match` are. Their survival
// differs by kind (greedy, fixed K = 8, every prompt of eight eval and held-out sets: the
// 8th draft survives in 90-97% of full-tail wrapping lookups, 31-60% of shorter-tail ones
// read once; docs/results.md).
ConfidenceSource lookup_source(std::span<const int32_t> tokens, const TailMatch& match, int32_t num_drafts) {
  const bool full_tail = match.length >= kRepeatMaxTail;
  const bool wraps = match.end + num_drafts > static_cast<int64_t>(tokens.size());
  if (full_tail) return wraps ? ConfidenceSource::kLookupFullTailWrapping : ConfidenceSource::kLookupFullTail;
  return wraps ? ConfidenceSource::kLookupWrapping : ConfidenceSource::kLookup;
}

}  // namespace

void DSparkProposerOptions::validate() const {
  DSPARK_CHECK(num_speculative_tokens >= 0, "num_speculative_tokens must be >= 0, got {}", num_speculative_tokens);
  DSPARK_CHECK(max_running >= 1, "max_running must be >= 1, got {}", max_running);
  DSPARK_CHECK(max_model_len >= 1, "max_model_len must be >= 1, got {}", max_model_len);
  DSPARK_CHECK(max_context_rows >= 1, "max_context_rows must be >= 1, got {}", max_context_rows);
  DSPARK_CHECK(max_pending_positions >= -1, "max_pending_positions must be >= -1, got {}", max_pending_positions);
  DSPARK_CHECK(kv_block_size >= 1, "kv_block_size must be >= 1, got {}", kv_block_size);
  DSPARK_CHECK(context_window >= 0, "context_window must be >= 0, got {}", context_window);
  DSPARK_CHECK(repeat_lookup_min_match >= 0 && repeat_lookup_min_match <= kRepeatMaxTail,
               "repeat_lookup_min_match must be within 0..{}, got {}", kRepeatMaxTail, repeat_lookup_min_match);
  DSPARK_CHECK(compute == DType::kBF16 || compute == DType::kF32, "compute dtype must be bf16 or f32, got {}",
               dtype_name(compute));
}

DSparkProposer::DSparkProposer(DrafterConfig config, const WeightStore& drafter, const Transformer& target,
                               const DSparkProposerOptions& options)
    : config_((check_drafter(config, drafter, target.config(), options), std::move(config))),
      options_(options),
      num_speculative_tokens_(options.num_speculative_tokens > 0 ? options.num_speculative_tokens
                                                                 : config_.speculative_tokens),
      block_(config_.block_size),
      hidden_(config_.layer.hidden_size),
      vocab_(config_.layer.vocab_size),
      fc_in_(static_cast<int64_t>(config_.aux_hidden_state_layer_ids.size()) * config_.target_hidden_size),
      max_block_rows_(options.max_running * block_),
      embedding_(drafter_embedding(drafter, target, hidden_, options_.compute)),
      fc_([&] {
        const int64_t shape[2] = {hidden_, fc_in_};
        return Linear(drafter.load_f32("fc.weight", shape), hidden_, fc_in_, {},
                      LinearOptions{options_.compute, options_.max_context_rows, LinearBackend::kAuto, options_.quantization});
      }()),
      hidden_norm_(load_vector(drafter, "hidden_norm.weight", hidden_)),
      final_norm_(load_vector(drafter, "norm.weight", hidden_)),
      vocab_head_(make_vocab_head(config_, drafter, target, "", options_, max_block_rows_)),
      greedy_head_(config_.greedy_draft_vocab_size > 0 && options_.greedy_draft_vocab
                       ? std::make_unique<DraftVocabHead>(
                             make_vocab_head(config_, drafter, target, "greedy_vocab.", options_, max_block_rows_))
                       : nullptr),
      heads_(config_, drafter,
             LinearOptions{options_.compute, options_.max_running, LinearBackend::kAuto, options_.quantization},
             max_block_rows_),
      rope_(rope_inverse_frequencies(config_.layer), options_.max_model_len + block_,
            rope_attention_factor(config_.layer)),
      kv_(config_.layer, kv_options(options_, block_)),
      allocator_(kv_.num_blocks()),
      logits_processor_(vocab_),
      workspace_(config_.layer, max_block_rows_, options_.max_context_rows),
      slots_(options_.max_running),
      max_pending_(pending_positions_per_slot(options_.max_pending_positions, options_.max_running,
                                                options_.max_model_len, fc_in_)),
      pending_(max_pending_ > 0 ? new float[options_.max_running * max_pending_ * fc_in_] : nullptr),
      ctx_in_(options_.max_context_rows * fc_in_),
      ctx_(options_.max_context_rows * hidden_),
      ctx_positions_(options_.max_context_rows),
      ctx_slots_(options_.max_context_rows),
      x_(max_block_rows_ * hidden_),
      positions_(max_block_rows_),
      seq_of_row_(max_block_rows_),
      num_keys_(max_block_rows_),
      row_slots_(max_block_rows_),
      block_tables_(options_.max_running),
      lm_in_(max_block_rows_ * hidden_),
      active_of_request_(options_.max_running, -1),
      markov_prev_(options_.max_running),
      markov_rows_(options_.max_running),
      markov_state_rows_(options_.max_running),
      markov_in_(options_.max_running * config_.markov_rank) {
  layers_.reserve(config_.layer.num_hidden_layers);
  // A block row sees num_keys = context + block keys: a window of context_window + block
  // keys is the last context_window context positions and the whole block.
  const int64_t window = options_.context_window > 0 ? options_.context_window + block_ : 0;
  for (int64_t l = 0; l < config_.layer.num_hidden_layers; ++l) {
    layers_.emplace_back(config_.layer, drafter, l, options_.compute, options_.quantization, max_block_rows_,
                         options_.max_context_rows, window);
  }
  const int32_t num_drafts = config_.num_drafts();
  for (size_t i = 0; i < slots_.size(); ++i) {
    SlotState& s = slots_[i];
    if (pending_) s.pending = pending_.get() + static_cast<int64_t>(i) * max_pending_ * fc_in_;
    s.drafts.reserve(num_drafts);
    s.probs.resize(static_cast<size_t>(num_drafts) * vocab_);
    s.confidence.resize(num_drafts);
    s.confidence_logits.resize(num_drafts);
  }
  active_.reserve(options_.max_running);
  history_.reserve(options_.max_model_len + block_);
  grammar_row_.resize(vocab_);
}

DSparkProposer::~DSparkProposer() = default;

std::unique_ptr<DSparkProposer> DSparkProposer::load(const std::filesystem::path& drafter_dir,
                                                     const std::filesystem::path& target_dir,
                                                     const DSparkProposerOptions& options) {
  DSPARK_CHECK(std::filesystem::is_directory(drafter_dir), "drafter directory {} does not exist", drafter_dir.string());
  DrafterConfig config = DrafterConfig::from_file(drafter_dir);
  const auto target = load_target_for_drafter(target_dir, options.compute, options.quantization);
  const WeightStore drafter(drafter_dir);
  return std::make_unique<DSparkProposer>(std::move(config), drafter, *target, options);
}

ProposerCapabilities DSparkProposer::capabilities() const {
  ProposerCapabilities c;
  c.needs_target_hidden_states = true;
  c.owns_kv_cache = true;
  c.provides_draft_probs = true;
  c.provides_confidence = heads_.has_confidence();
  return c;
}

size_t DSparkProposer::weight_bytes() const {
  size_t total = fc_.weight_bytes() + vocab_head_.weight_bytes() + heads_.weight_bytes();
  for (const DraftLayer& l : layers_) total += l.weight_bytes();
  return total;
}

void DSparkProposer::release(int32_t slot) {
  SlotState& s = slots_[slot];
  s.blocks.release_all(allocator_);
  s.num_observed = 0;
  s.num_pending = 0;
  s.drafts.clear();
}

void DSparkProposer::observe(std::span<const CommittedHiddenStates> committed) {
  const int64_t target_hidden = config_.target_hidden_size;
  const size_t num_layers = config_.aux_hidden_state_layer_ids.size();
  int64_t rows = 0;
  for (const CommittedHiddenStates& c : committed) {
    DSPARK_CHECK(c.slot >= 0 && c.slot < static_cast<int32_t>(slots_.size()), "slot {} outside 0..{}", c.slot,
                 slots_.size() - 1);
    SlotState& s = slots_[c.slot];
    DSPARK_CHECK(c.start_position == s.num_observed,
                 "slot {}: committed hidden states start at position {} but {} positions were seen (they must arrive "
                 "in order, without gaps)",
                 c.slot, c.start_position, s.num_observed);
    DSPARK_CHECK(c.hidden_size == target_hidden, "committed hidden states are {} wide; the drafter expects {}",
                 c.hidden_size, target_hidden);
    if (c.num_positions <= 0) continue;
    const int32_t end = c.start_position + c.num_positions;
    if (max_pending_ == 0) {  // projected at once (pending rows reserve when staged)
      DSPARK_CHECK(s.blocks.reserve_window(first_visible(end), end, kv_.block_size(), allocator_),
                   "drafter KV cache exhausted");
    }
    for (int32_t i = 0; i < c.num_positions; ++i) {
      float* dst;  // [k * target_hidden]: concat(h_l1 .. h_lk)
      if (max_pending_ > 0) {
        if (s.num_pending == max_pending_) rows = stage_pending(s, rows);  // full: project now
        dst = s.pending + static_cast<int64_t>(s.num_pending) * fc_in_;
        ++s.num_pending;
      } else if (s.num_observed < first_visible(end)) {  // out of every future window
        ++s.num_observed;
        continue;
      } else {
        rows = make_room(rows);
        dst = ctx_in_.data() + rows * fc_in_;
        ctx_positions_[rows] = s.num_observed;
        ctx_slots_[rows] = slot_of(s.blocks, s.num_observed, kv_.block_size());
        ++rows;
      }
      for (size_t l = 0; l < num_layers; ++l) {
        std::memcpy(dst + l * target_hidden, c.hidden + l * c.layer_stride + i * c.hidden_size,
                    target_hidden * sizeof(float));
      }
      ++s.num_observed;
    }
  }
  if (rows > 0) project_context(rows);
}

void DSparkProposer::catch_up(std::span<const DraftRequest> requests) {
  int64_t rows = 0;
  for (const DraftRequest& r : requests) {
    DSPARK_CHECK(r.slot >= 0 && r.slot < static_cast<int32_t>(slots_.size()), "slot {} outside 0..{}", r.slot,
                 slots_.size() - 1);
    if (r.max_drafts > 0) rows = stage_pending(slots_[r.slot], rows);
  }
  if (rows > 0) project_context(rows);
}

int32_t DSparkProposer::first_visible(int32_t num_observed) const {
  if (options_.context_window <= 0) return 0;
  return std::max<int32_t>(0, num_observed - static_cast<int32_t>(options_.context_window));
}

int64_t DSparkProposer::stage_pending(SlotState& s, int64_t rows) {
  const int32_t first = s.num_observed - s.num_pending;
  const int32_t visible = first_visible(s.num_observed);
  DSPARK_CHECK(s.blocks.reserve_window(visible, s.num_observed, kv_.block_size(), allocator_),
               "drafter KV cache exhausted");
  for (int32_t i = std::max(0, visible - first); i < s.num_pending; ++i) {
    rows = make_room(rows);
    std::memcpy(ctx_in_.data() + rows * fc_in_, s.pending + static_cast<int64_t>(i) * fc_in_, fc_in_ * sizeof(float));
    ctx_positions_[rows] = first + i;
    ctx_slots_[rows] = slot_of(s.blocks, first + i, kv_.block_size());
    ++rows;
  }
  s.num_pending = 0;
  return rows;
}

int64_t DSparkProposer::make_room(int64_t rows) {
  if (rows < options_.max_context_rows) return rows;
  project_context(rows);
  return 0;
}

void DSparkProposer::project_context(int64_t rows) {
  fc_.forward(ctx_in_.data(), ctx_.data(), rows);
  rms_norm(ctx_.data(), hidden_norm_.data(), ctx_.data(), rows, hidden_, config_.layer.rms_norm_eps);
  for (size_t l = 0; l < layers_.size(); ++l) {
    layers_[l].write_context(ctx_.data(), rows, ctx_positions_.data(), ctx_slots_.data(), rope_,
                             kv_.layer(static_cast<int64_t>(l)), workspace_);
  }
}

void DSparkProposer::run_backbone(int64_t rows) {
  LayerStepContext step;
  step.num_tokens = rows;
  step.positions = positions_.data();
  step.seq_of_token = seq_of_row_.data();
  step.num_keys = num_keys_.data();
  step.slots = row_slots_.data();
  step.block_tables = block_tables_.data();
  step.rope = &rope_;
  for (size_t l = 0; l < layers_.size(); ++l) {
    layers_[l].forward_block(x_.data(), step, kv_.layer(static_cast<int64_t>(l)), workspace_);
  }
  rms_norm(x_.data(), final_norm_.data(), x_.data(), rows, hidden_, config_.layer.rms_norm_eps);
}

void DSparkProposer::propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) {
  DSPARK_CHECK(requests.size() <= slots_.size(), "{} requests but only {} drafter slots", requests.size(),
               slots_.size());
  catch_up(requests);
  const int64_t bs = kv_.block_size();
  active_.clear();
  std::fill(active_of_request_.begin(), active_of_request_.end(), -1);
  int32_t row = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const DraftRequest& r = requests[i];
    drafts[i] = Draft{};
    DSPARK_CHECK(r.slot >= 0 && r.slot < static_cast<int32_t>(slots_.size()), "slot {} outside 0..{}", r.slot,
                 slots_.size() - 1);
    SlotState& s = slots_[r.slot];
    s.drafts.clear();
    if (r.max_drafts <= 0) continue;
    DSPARK_CHECK(!r.tokens.empty(), "a request with no committed tokens cannot draft");
    const int32_t context = static_cast<int32_t>(r.tokens.size()) - 1;  // the anchor has no hidden state yet
    DSPARK_CHECK(s.num_observed == context,
                 "slot {}: the drafter saw the hidden states of {} positions but {} tokens precede the anchor", r.slot,
                 s.num_observed, context);
    if (draft_by_repeat_lookup(r, s)) {
      drafts[i] = Draft{s.drafts, nullptr, heads_.has_confidence() ? s.confidence.data() : nullptr,
                        lookup_source(r.tokens, s.repeat, static_cast<int32_t>(s.drafts.size()))};
      continue;
    }
    DSPARK_CHECK(context + block_ <= rope_.max_positions(), "slot {}: a block at position {} passes the context {}",
                 r.slot, context, options_.max_model_len);
    DSPARK_CHECK(s.blocks.reserve_window(first_visible(context), context + block_, bs, allocator_),
                 "drafter KV cache exhausted");
    const int32_t a = static_cast<int32_t>(active_.size());
    const int32_t num_drafts = std::min(r.max_drafts, num_speculative_tokens_);
    // A positive bias may make a token outside the greedy vocabulary the argmax: such
    // requests draft from the whole one. Bans (and penalties) only remove candidates.
    const auto& bias = r.sampling->logit_bias;
    const bool favours = std::any_of(bias.begin(), bias.end(), [](const auto& b) { return b.second > 0.0f; });
    const bool greedy_vocab = greedy_head_ && r.sampling->greedy() && !favours;
    DraftVocabHead* head = greedy_vocab ? greedy_head_.get() : &vocab_head_;
    active_.push_back({static_cast<int32_t>(i), r.slot, num_drafts, row, /*logit_row=*/0, head});
    active_of_request_[i] = a;
    block_tables_[a] = s.blocks.data();
    for (int32_t j = 0; j < block_; ++j, ++row) {
      embedding_->lookup(j == 0 ? r.tokens.back() : config_.mask_token_id, x_.data() + static_cast<int64_t>(row) * hidden_);
      positions_[row] = context + j;
      seq_of_row_[row] = a;
      num_keys_[row] = context + static_cast<int32_t>(block_);
      row_slots_[row] = slot_of(s.blocks, context + j, bs);
    }
  }
  if (active_.empty()) return;
  const double start = now_seconds();
  run_backbone(row);
  const double backbone_end = now_seconds();

  // The LM heads over the rows that produce drafts only (the costliest matmuls): one batched
  // product per draft vocabulary, over the requests drafting from it.
  const int32_t first_slot = config_.sample_from_anchor ? 0 : 1;
  int32_t logit_row = 0;
  for (DraftVocabHead* head : {greedy_head_.get(), &vocab_head_}) {
    const int32_t first = logit_row;
    for (Active& a : active_) {
      if (head == nullptr || a.head != head) continue;
      a.logit_row = logit_row;
      for (int32_t j = 0; j < a.num_drafts; ++j, ++logit_row) {
        std::memcpy(lm_in_.data() + static_cast<int64_t>(logit_row) * hidden_,
                    x_.data() + static_cast<int64_t>(a.first_row + first_slot + j) * hidden_, hidden_ * sizeof(float));
      }
    }
    if (logit_row > first) head->project(lm_in_.data() + static_cast<int64_t>(first) * hidden_, first, logit_row - first);
  }
  heads_.project_states(lm_in_.data(), logit_row);  // the contextual Markov head's W_h·h_j, by logit row
  const double heads_end = now_seconds();
  draft_sequentially(requests);
  const double end = now_seconds();
  stage_seconds_[0] += backbone_end - start;
  stage_seconds_[1] += heads_end - backbone_end;
  stage_seconds_[2] += end - heads_end;
  for (const Active& a : active_) {
    const SlotState& s = slots_[a.slot];
    const float* q = drafts_argmax(*requests[a.request].sampling) ? nullptr : s.probs.data();
    drafts[a.request] = Draft{s.drafts, q, heads_.has_confidence() ? s.confidence.data() : nullptr};
  }
}

bool DSparkProposer::draft_by_repeat_lookup(const DraftRequest& r, SlotState& s) {
  const bool shifts = heads_.has_confidence() && !config_.confidence_repeat_shifts.empty();
  const bool lookup = options_.repeat_lookup_min_match > 0;
  s.repeat = r.sampling->greedy() && (shifts || lookup) ? find_tail_match(r.tokens, kRepeatMinTail, kRepeatMaxTail)
                                                        : TailMatch{};
  if (!lookup || !s.repeat.found() || s.repeat.length < options_.repeat_lookup_min_match) return false;
  const int32_t num_drafts = std::min(r.max_drafts, num_speculative_tokens_);
  for (int32_t j = 0; j < num_drafts; ++j) {
    s.drafts.push_back(repeated_token(r.tokens, s.repeat, j));
    s.confidence[j] = kRepeatLookupConfidence;
  }
  return true;
}

// The sequential stage: position by position, every request still drafting gets its Markov
// term (one batched feature computation and W₂ product), its transform and its draw.
void DSparkProposer::draft_sequentially(std::span<const DraftRequest> requests) {
  const int32_t first_slot = config_.sample_from_anchor ? 0 : 1;
  int32_t longest = 0;
  for (const Active& a : active_) longest = std::max(longest, a.num_drafts);
  // s.repeat was found by propose() (draft_by_repeat_lookup) for the repeat shifts.
  for (const Active& a : active_) slots_[a.slot].repeat_agrees = slots_[a.slot].repeat.found();
  for (int32_t j = 0; j < longest; ++j) {
    for (DraftVocabHead* head : {greedy_head_.get(), &vocab_head_}) {
      int64_t n = 0;
      for (const Active& a : active_) {
        if (a.num_drafts <= j || head == nullptr || a.head != head) continue;
        markov_prev_[n] = j == 0 ? requests[a.request].tokens.back() : slots_[a.slot].drafts[j - 1];
        markov_rows_[n] = head->row(a.logit_row + j);
        markov_state_rows_[n] = a.logit_row + j;
        ++n;
      }
      if (!heads_.has_markov() || n == 0) continue;
      heads_.markov_features(markov_prev_.data(), markov_state_rows_.data(), n, markov_in_.data());
      head->add_markov_bias(markov_in_.data(), n, markov_rows_.data());
    }
    for (Active& a : active_) {
      if (a.num_drafts <= j) continue;
      const DraftRequest& r = requests[a.request];
      SlotState& s = slots_[a.slot];
      const int32_t prev = j == 0 ? r.tokens.back() : s.drafts[j - 1];
      const SamplingParams& sp = *r.sampling;
      const float* logits = r.grammar ? grammar_bound_row(a, r, j) : nullptr;
      if (r.grammar && logits == nullptr) {  // the grammar allows none of the drafter's tokens here
        a.num_drafts = j;
        continue;
      }
      // Greedy: the argmax (of the masked row when a grammar binds the request), no q.
      int32_t token = -1;
      if (drafts_argmax(sp)) {
        token = logits ? greedy_draft_token(logits, vocab_, {}, /*ascending=*/true)
                       : a.head->greedy_token(a.logit_row + j);
      }
      if (token < 0) {
        token = transform_and_draw(logits_processor_, logits ? logits : a.head->target_row(a.logit_row + j),
                                   s.probs.data() + static_cast<int64_t>(j) * vocab_, vocab_, r, s.drafts, history_);
      }
      if (heads_.has_confidence()) {
        const float* h = x_.data() + static_cast<int64_t>(a.first_row + first_slot + j) * hidden_;
        const float z = heads_.confidence_logit(h, prev);
        s.confidence_logits[j] = z;
        s.repeat_agrees = s.repeat_agrees && token == repeated_token(r.tokens, s.repeat, j);
        const float shift = sp.greedy() ? config_.confidence_repeat_shift(s.repeat_agrees) : 0.0f;
        s.confidence[j] =
            1.0f / (1.0f + std::exp(-(z / config_.confidence_temperature(j, !sp.greedy()) + shift)));
      }
      s.drafts.push_back(token);
    }
  }
}

const float* DSparkProposer::grammar_bound_row(const Active& a, const DraftRequest& r, int32_t j) {
  const bool any = dspark::grammar_bound_row(r, slots_[a.slot].drafts, a.head->target_row(a.logit_row + j),
                                             grammar_row_.data(), vocab_);
  return any ? grammar_row_.data() : nullptr;
}

std::vector<ProposerStage> DSparkProposer::stage_seconds() const {
  return {{"backbone", stage_seconds_[0]}, {"heads", stage_seconds_[1]}, {"sequential", stage_seconds_[2]}};
}

DSparkProposer::Inspection DSparkProposer::inspect(size_t request) const {
  Inspection out;
  if (request >= active_of_request_.size() || active_of_request_[request] < 0) return out;
  const Active& a = active_[active_of_request_[request]];
  const size_t l = static_cast<size_t>(a.num_drafts);
  out.hidden = {x_.data() + static_cast<int64_t>(a.first_row) * hidden_, static_cast<size_t>(block_ * hidden_)};
  out.logits = a.head->target_rows(a.logit_row, a.num_drafts);
  out.base_logits = a.head->base_rows(a.logit_row, a.num_drafts);
  if (heads_.has_confidence()) out.confidence_logits = {slots_[a.slot].confidence_logits.data(), l};
  return out;
}

}  // namespace dspark
