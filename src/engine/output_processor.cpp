#include "engine/output_processor.h"

#include <algorithm>
#include <limits>

#include "core/check.h"
#include "core/clock.h"
#include "engine/token_logprobs.h"

namespace dspark {

OutputProcessor::OutputProcessor(int64_t vocab_size, int64_t max_model_len, int32_t max_drafts,
                                 const Tokenizer& tokenizer)
    : vocab_(vocab_size),
      max_model_len_(max_model_len),
      tokenizer_(tokenizer),
      logits_processor_(vocab_size),
      rejection_sampler_(vocab_size),
      probs_((max_drafts + 1) * vocab_size),
      logprob_probs_(vocab_size) {
  // masked_ is sized at the first constrained request.
  history_.reserve(max_model_len + max_drafts);
}

OutputProcessor::Verdict OutputProcessor::commit(Request& r, const float* logits, std::vector<RequestOutput>& outputs) {
  const int64_t vocab = vocab_;
  const int32_t num_drafts = static_cast<int32_t>(r.drafts.size());
  if (r.grammar) {
    // Row j is masked for the output plus drafts 0..j-1 (all valid: the engine cut the
    // drafts at the first invalid one). Drafts and verification then see the same
    // distribution the plain constrained decoding would: still lossless.
    masked_.resize(std::max(masked_.size(), static_cast<size_t>((num_drafts + 1) * vocab)));
    std::copy_n(logits, (num_drafts + 1) * vocab, masked_.data());
    r.grammar->mask_rows(masked_.data(), vocab, r.drafts);
    logits = masked_.data();
  }
  logits = ban_early_stops(r, logits, num_drafts + 1);
  const SamplingParams& sp = r.options.sampling;
  // Target distributions p_0..p_L under the request's transform; the repetition penalty
  // at draft position j sees the drafts before it, exactly as plain decoding would.
  const bool penalised = sp.uses_history();
  if (penalised) {
    history_.assign(r.tokens.begin(), r.tokens.end());
    history_.insert(history_.end(), r.drafts.begin(), r.drafts.end());
  }
  for (int32_t j = 0; j <= num_drafts; ++j) {
    const std::span<const int32_t> history =
        penalised ? std::span<const int32_t>(history_.data(), r.tokens.size() + j) : std::span<const int32_t>();
    logits_processor_.to_probs(logits + j * vocab, probs_.data() + j * vocab, sp, history, r.num_prompt_tokens);
  }
  VerifyInput in;
  in.draft_tokens = r.drafts;
  in.draft_probs = r.draft_probs;
  in.target_probs = probs_.data();
  in.vocab_size = vocab;
  in.greedy = sp.greedy();
  in.position_keyed = sp.position_keyed;
  in.seed = sp.seed;
  in.first_position = static_cast<int64_t>(r.tokens.size());  // where row 0's token goes
  const VerifyResult verdict = rejection_sampler_.verify(in, r.rng);
  if (num_drafts > 0) {
    const std::span<const float> confidence =
        r.draft_confidence ? std::span<const float>(r.draft_confidence, num_drafts) : std::span<const float>();
    r.spec_metrics.record_round(num_drafts, verdict.num_accepted, confidence);
  }
  // The anchor and the accepted drafts now have valid KV; the new token does not yet.
  r.num_computed += 1 + verdict.num_accepted;

  RequestOutput out;
  bool finished = false;
  // Row j of the target's distributions decided the token emitted at draft position j;
  // its history is everything committed before that token.
  auto emit = [&](int32_t j, int32_t token) {
    const size_t history_length = r.tokens.size();
    const size_t before = out.token_ids.size();
    finished = append_token(r, token, out);
    if (r.options.logprobs >= 0 && out.token_ids.size() > before) {
      const std::span<const int32_t> history =
          penalised ? std::span<const int32_t>(history_.data(), history_length) : std::span<const int32_t>();
      out.logprobs.push_back(token_logprob(logits + j * vocab, probs_.data() + j * vocab, token, r, history));
    }
  };
  for (int32_t j = 0; j < verdict.num_accepted && !finished; ++j) emit(j, r.drafts[j]);
  if (!finished) emit(verdict.num_accepted, verdict.next_token);
  Verdict result{num_drafts, verdict.num_accepted, std::nullopt};
  if (verdict.is_bonus && r.unverified_draft >= 0)
    result.unverified_survival = cut_draft_survival(r, probs_.data() + static_cast<int64_t>(num_drafts) * vocab,
                                                    num_drafts, verdict.next_token);
  r.clear_drafts();
  out.prompt_logprobs = std::move(r.prompt_logprobs);  // the first output: prefill is over
  r.prompt_logprobs.clear();
  if (!out.token_ids.empty() || out.finished) {
    out.request_id = r.id;
    out.prompt_tokens = r.num_prompt_tokens;
    out.output_tokens = r.num_output_tokens();
    outputs.push_back(std::move(out));
  }
  return result;
}

double OutputProcessor::cut_draft_survival(const Request& r, const float* p, int32_t position, int32_t emitted) const {
  const SamplingParams& sp = r.options.sampling;
  const int32_t x = r.unverified_draft;
  if (sp.greedy() || sp.position_keyed) return x == emitted ? 1.0 : 0.0;
  // The standard rule (spec/rejection_sampler.h): accept with min(1, p(x) / q(x)); a
  // one-hot q (no draft_probs) has q(x) = 1, and q(x) = 0 accepts wherever p(x) > 0.
  const double px = p[x];
  const double qx = r.draft_probs ? r.draft_probs[static_cast<int64_t>(position) * vocab_ + x] : 1.0;
  if (qx <= 0) return px > 0 ? 1.0 : 0.0;
  return std::min(1.0, px / qx);
}

void OutputProcessor::gather_prompt_logprobs(Request& r, const float* rows, int64_t first_position, int32_t num_rows) {
  DSPARK_CHECK(first_position == r.num_prompt_logprobs, "prompt logprobs from position {}, expected {}",
               first_position, r.num_prompt_logprobs);
  const SamplingParams softmax;  // temperature 1, nothing else: the model's own distribution
  const int32_t top = std::min<int32_t>(r.options.prompt_logprobs, static_cast<int32_t>(vocab_));
  for (int32_t k = 0; k < num_rows; ++k) {
    logits_processor_.to_probs(rows + k * vocab_, logprob_probs_.data(), softmax, {}, r.num_prompt_tokens);
    const int32_t token = r.tokens[static_cast<size_t>(first_position + k + 1)];
    r.prompt_logprobs.push_back(dspark::token_logprob(logprob_probs_.data(), vocab_, token, top));
  }
  r.num_prompt_logprobs += num_rows;
}

TokenLogprob OutputProcessor::token_logprob(const float* logits, const float* probs, int32_t token, const Request& r,
                                            std::span<const int32_t> history) {
  const SamplingParams& sp = r.options.sampling;
  if (sp.greedy()) {
    SamplingParams softmax = sp;
    softmax.temperature = 1.0f;
    softmax.top_k = 0;
    softmax.top_p = 1.0f;
    softmax.min_p = 0.0f;
    logits_processor_.to_probs(logits, logprob_probs_.data(), softmax, history, r.num_prompt_tokens);
    probs = logprob_probs_.data();
  }
  return dspark::token_logprob(probs, vocab_, token, std::min<int32_t>(r.options.logprobs, static_cast<int32_t>(vocab_)));
}

const float* OutputProcessor::ban_early_stops(const Request& r, const float* logits, int32_t num_rows) {
  const int64_t short_rows = std::min<int64_t>(num_rows, r.options.min_tokens - r.num_output_tokens());
  if (short_rows <= 0) return logits;
  const int64_t vocab = vocab_;
  if (logits != masked_.data()) {
    masked_.resize(std::max(masked_.size(), static_cast<size_t>(num_rows * vocab)));
    std::copy_n(logits, num_rows * vocab, masked_.data());
  }
  constexpr float kBanned = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < short_rows; ++j) {
    float* row = masked_.data() + j * vocab;
    if (!r.options.ignore_eos) {
      for (const int32_t id : tokenizer_.eos_ids()) row[id] = kBanned;
    }
    for (const int32_t id : r.options.stop_token_ids) row[id] = kBanned;
  }
  return masked_.data();
}

std::optional<FinishReason> OutputProcessor::ends_output(const Request& r, int32_t token) const {
  const auto& eos = tokenizer_.eos_ids();
  if (!r.options.ignore_eos && std::find(eos.begin(), eos.end(), token) != eos.end()) return FinishReason::kEos;
  const auto& stops = r.options.stop_token_ids;
  if (std::find(stops.begin(), stops.end(), token) != stops.end()) return FinishReason::kStop;
  return std::nullopt;
}

bool OutputProcessor::append_token(Request& r, int32_t token, RequestOutput& out) {
  if (r.first_token_time == 0) r.first_token_time = now_seconds();
  if (const std::optional<FinishReason> reason = ends_output(r, token)) {
    finish(r, *reason, out);
    return true;
  }
  r.tokens.push_back(token);
  out.token_ids.push_back(token);
  if (r.grammar) {
    DSPARK_CHECK(r.grammar->accept_token(token), "token {} does not continue the constrained output", token);
    if (r.grammar->complete()) {  // a closed object, a regex match no byte may extend: nothing may follow
      finish(r, FinishReason::kStop, out);
      return true;
    }
  }
  if (r.num_output_tokens() >= r.options.max_tokens || static_cast<int64_t>(r.tokens.size()) >= max_model_len_) {
    finish(r, FinishReason::kLength, out);
    return true;
  }
  return false;
}

void OutputProcessor::finish(Request& r, FinishReason reason, RequestOutput& out) {
  r.finish_reason = reason;
  r.finish_time = now_seconds();
  r.state = RequestState::kFinished;
  out.request_id = r.id;
  out.finished = true;
  out.finish_reason = reason;
  out.prompt_tokens = r.num_prompt_tokens;
  out.cached_prompt_tokens = std::max<int64_t>(r.num_cached_prompt_tokens, 0);
  out.output_tokens = r.num_output_tokens();
  out.spec_metrics = r.spec_metrics;
}

}  // namespace dspark
