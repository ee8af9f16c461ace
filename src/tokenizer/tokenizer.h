// Tokenizer loaded from a Hugging Face tokenizer.json (plus tokenizer_config.json and
// generation_config.json next to it, for BOS/EOS and add_bos_token).
//
// Models: BPE in two flavours — byte-level (GPT-2, Llama-3, Qwen2/3 pre-tokenizer
// regexes, run through PCRE2 with Unicode properties) and SentencePiece-style (Prepend /
// Replace "▁" normalizer or Metaspace pre-tokenizer, <0xNN> byte fallback) as in Llama-2
// and Mistral. Added tokens are matched in the raw text before the model runs.
// Encodings match Hugging Face tokenizers' output exactly (tested on reference cases).
// Components outside the supported set (model types other than BPE, unknown normalizers,
// pre-tokenizers, decoders, post-processors) are rejected at load time with a
// dspark::Error naming the component and the file. A Tokenizer is immutable after
// loading: encode/decode may run concurrently from any number of threads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dspark {

class Tokenizer {
 public:
  // dir holds tokenizer.json and optionally tokenizer_config.json, generation_config.json.
  static Tokenizer from_dir(const std::filesystem::path& dir);
  // Just a tokenizer.json (no special-token config).
  static Tokenizer from_file(const std::filesystem::path& tokenizer_json);
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // add_special_tokens: prepend BOS when the config asks for it (add_bos_token, or the
  // post_processor template), append EOS when add_eos_token. Special-token strings in
  // text (e.g. "<|eot_id|>") always become their ids. Throws dspark::Error when text is
  // not valid UTF-8.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = false) const;
  // Ids outside the vocabulary (e.g. padding rows of a larger embedding) are skipped, as
  // Hugging Face does; invalid UTF-8 from byte tokens becomes U+FFFD.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  int64_t vocab_size() const;                    // highest id + 1, added tokens included
  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The vocabulary string ("" for an unused id); throws for ids outside [0, vocab_size).
  std::string_view id_to_token(int32_t id) const;
  bool is_special(int32_t id) const;
  int32_t bos_id() const;                          // -1 when none
  const std::vector<int32_t>& eos_ids() const;     // from generation_config, else tokenizer_config

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Incremental detokenizer for streaming: push ids one by one, get back only text that is
// final (complete UTF-8 characters, and no pending leading-space strip or byte-fallback
// sequence). Concatenating every push() and flush() equals decode(all ids) with the same
// skip_special_tokens. Each push decodes a small window (the last emitted id as context
// plus the ids not yet emitted), so the cost per id does not grow with the history.
// Holds a reference to the tokenizer, which must outlive it. Not thread-safe.
class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = true);
  std::string push(int32_t id);
  // Returns whatever is still held back (an unfinished character or byte sequence).
  std::string flush();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_tokens_;
  std::vector<int32_t> ids_;   // [window] context ids (already emitted), then pending ids
  size_t num_context_ = 0;     // ids_[0, num_context_) are context
  std::string context_text_;   // decode(ids_[0, num_context_))
};

}  // namespace dspark
