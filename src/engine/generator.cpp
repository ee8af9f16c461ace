#include "engine/generator.h"

#include <algorithm>

#include "core/check.h"
#include "core/clock.h"
#include "core/rng.h"
#include "engine/text_stream.h"

namespace dspark {

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength: return "length";
    case FinishReason::kStop:
    case FinishReason::kEos: return "stop";
  }
  return "stop";
}

Generator::Generator(Transformer& model, const Tokenizer& tokenizer, KvPool& kv)
    : model_(model),
      tokenizer_(tokenizer),
      kv_(kv),
      allocator_(kv.num_blocks()),
      logits_processor_(model.config().vocab_size),
      probs_(model.config().vocab_size) {}

GenerationResult Generator::generate(std::span<const int32_t> prompt, const GenerationOptions& options,
                                     const std::function<void(std::string_view)>& on_text) {
  options.sampling.validate();
  DSPARK_CHECK(!prompt.empty(), "the prompt is empty (no tokens to condition on)");
  DSPARK_CHECK(options.max_tokens >= 0, "max_tokens must be >= 0, got {}", options.max_tokens);
  const int64_t max_len = model_.max_model_len();
  DSPARK_CHECK(static_cast<int64_t>(prompt.size()) < max_len,
               "the prompt has {} tokens; the model's context is {} tokens (at least one must be left to generate)",
               prompt.size(), max_len);

  const double start = now_seconds();
  GenerationResult result;
  result.prompt_tokens = static_cast<int64_t>(prompt.size());
  const int64_t vocab = model_.config().vocab_size;
  const int64_t budget = std::min<int64_t>(options.max_tokens, max_len - static_cast<int64_t>(prompt.size()));
  const int64_t chunk = options.prefill_chunk > 0 ? std::min(options.prefill_chunk, model_.options().max_batch_tokens)
                                                  : model_.options().max_batch_tokens;

  BlockTable table;
  std::vector<int32_t> history(prompt.begin(), prompt.end());  // prompt + generated
  Rng rng(options.sampling.seed);
  StreamingDecoder decoder(tokenizer_);
  TextStream stream(options.stop);
  auto emit = [&](const std::string& piece) {
    if (!piece.empty() && on_text) on_text(piece);
  };

  struct Release {
    BlockTable& table;
    BlockAllocator& allocator;
    ~Release() { table.release_all(allocator); }
  } release{table, allocator_};

  const auto& eos = tokenizer_.eos_ids();
  int64_t computed = 0;  // positions whose KV is cached
  std::vector<int32_t> pending(prompt.begin(), prompt.end());
  while (static_cast<int64_t>(result.tokens.size()) < budget) {
    // Feed what is pending: prompt chunks, then the last sampled token.
    const float* logits = nullptr;
    while (!pending.empty()) {
      const int64_t take = std::min<int64_t>(chunk, static_cast<int64_t>(pending.size()));
      DSPARK_CHECK(table.reserve(computed + take, kv_.block_size(), allocator_),
                   "KV cache too small: {} positions needed", computed + take);
      const SequenceSlice slice{static_cast<int32_t>(take), static_cast<int32_t>(computed), table.data()};
      const int32_t last_row = static_cast<int32_t>(take - 1);
      const bool final_chunk = take == static_cast<int64_t>(pending.size());
      ForwardBatch batch;
      batch.token_ids = std::span<const int32_t>(pending.data(), take);
      batch.sequences = std::span<const SequenceSlice>(&slice, 1);
      batch.logit_rows = final_chunk ? std::span<const int32_t>(&last_row, 1) : std::span<const int32_t>();
      const ForwardResult out = model_.forward(batch, kv_);
      computed += take;
      pending.erase(pending.begin(), pending.begin() + take);
      if (final_chunk) logits = out.logits;
    }

    logits_processor_.to_probs(logits, probs_.data(), options.sampling, history);
    const int32_t token = options.sampling.greedy() ? argmax(probs_.data(), vocab)
                                                    : sample_from_probs(probs_.data(), vocab, rng.uniform());
    if (result.tokens.empty()) result.ttft_seconds = now_seconds() - start;
    if (!options.ignore_eos && std::find(eos.begin(), eos.end(), token) != eos.end()) {
      result.finish_reason = FinishReason::kEos;
      break;
    }
    result.tokens.push_back(token);
    history.push_back(token);
    emit(stream.append(decoder.push(token)));
    if (stream.stopped()) {
      result.finish_reason = FinishReason::kStop;
      break;
    }
    pending.push_back(token);
  }
  if (!stream.stopped()) emit(stream.append(decoder.flush()));
  emit(stream.finish());
  result.text = stream.text();
  result.total_seconds = now_seconds() - start;
  return result;
}

}  // namespace dspark
