#include "tokenizer/tokenizer.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/tokenizer_json.h"
#include "tokenizer/tokenizer_utf8.h"

namespace dspark {

std::unique_ptr<Tokenizer::Impl> Tokenizer::Impl::load(const std::filesystem::path& path) {
  auto impl = std::make_unique<Impl>();
  impl->source = path.string();
  const std::string& src = impl->source;
  const nlohmann::json j = tok::read_json_file(path);
  try {
    DSPARK_CHECK(j.is_object() && j.contains("model"), "{}: not a tokenizer.json (no \"model\")",
                 src);
    impl->model = std::make_unique<tok::BpeModel>(j["model"], src);
    const auto null = nlohmann::json();
    impl->normalizer = tok::make_normalizer(j.value("normalizer", null), src);
    impl->pre_tokenizer = tok::make_pre_tokenizer(j.value("pre_tokenizer", null), src);
    impl->decoder = tok::make_decoder(j.value("decoder", null), src);
    impl->frame = tok::parse_post_processor(j.value("post_processor", null), src);

    int32_t max_id = impl->model->max_id();
    for (const auto& a : j.value("added_tokens", nlohmann::json::array())) {
      tok::AddedToken t;
      t.id = a.at("id").get<int32_t>();
      t.content = a.at("content").get<std::string>();
      t.special = a.value("special", false);
      t.lstrip = a.value("lstrip", false);
      t.rstrip = a.value("rstrip", false);
      t.single_word = a.value("single_word", false);
      t.normalized = a.value("normalized", !t.special);
      DSPARK_CHECK(t.id >= 0, "{}: added token '{}' has negative id", src, t.content);
      max_id = std::max(max_id, t.id);
      impl->added_ids.emplace(t.content, t.id);
      impl->added_tokens.push_back(std::move(t));
    }
    std::vector<tok::AddedToken> raw, normalized;
    for (const auto& t : impl->added_tokens) (t.normalized ? normalized : raw).push_back(t);
    impl->raw_matcher = tok::AddedTokenMatcher(raw);
    impl->normalized_matcher = tok::AddedTokenMatcher(normalized);

    impl->id_to_token.assign(static_cast<size_t>(max_id) + 1, std::string());
    impl->is_special.assign(static_cast<size_t>(max_id) + 1, 0);
    for (const auto& [token, id] : impl->model->vocab()) impl->id_to_token[id] = token;
    for (const auto& t : impl->added_tokens) {
      impl->id_to_token[t.id] = t.content;
      impl->is_special[t.id] = t.special;
    }
  } catch (const nlohmann::json::exception& e) {
    DSPARK_FAIL("{}: invalid tokenizer.json: {}", src, e.what());
  }
  // Without model configs, the post_processor's frame is the best guess for BOS/EOS.
  if (impl->frame.prefix.size() == 1) impl->bos_id = impl->frame.prefix[0];
  if (impl->frame.suffix.size() == 1) impl->eos_ids = impl->frame.suffix;
  return impl;
}

std::optional<int32_t> Tokenizer::Impl::token_to_id(std::string_view token) const {
  const auto it = added_ids.find(token);
  if (it != added_ids.end()) return it->second;
  return model->token_to_id(token);
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

Tokenizer Tokenizer::from_file(const std::filesystem::path& tokenizer_json) {
  return Tokenizer(Impl::load(tokenizer_json));
}

Tokenizer Tokenizer::from_dir(const std::filesystem::path& dir) {
  DSPARK_CHECK(std::filesystem::is_directory(dir), "tokenizer directory {} does not exist",
               dir.string());
  auto impl = Impl::load(dir / "tokenizer.json");
  impl->apply_model_configs(dir);
  return Tokenizer(std::move(impl));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  const Impl& m = *impl_;
  const size_t bad = tok::utf8_find_invalid(text);
  DSPARK_CHECK(bad == std::string_view::npos,
               "cannot encode text that is not valid UTF-8 (byte 0x{:02X} at offset {})",
               bad == std::string_view::npos ? 0 : static_cast<unsigned char>(text[bad]), bad);
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  if (add_special_tokens) ids = m.frame.prefix;

  tok::BpeScratch scratch;
  std::vector<tok::Segment> raw_segments, segments;
  std::vector<tok::PreToken> words;
  m.raw_matcher.split(text, raw_segments);
  for (const tok::Segment& raw : raw_segments) {
    if (raw.id >= 0) {
      ids.push_back(raw.id);
      continue;
    }
    std::string piece(text.substr(raw.begin, raw.end - raw.begin));
    if (m.normalizer != nullptr) m.normalizer->normalize(piece);
    segments.clear();
    m.normalized_matcher.split(piece, segments);
    for (const tok::Segment& seg : segments) {
      if (seg.id >= 0) {
        ids.push_back(seg.id);
        continue;
      }
      words.clear();
      words.push_back({piece.substr(seg.begin, seg.end - seg.begin), raw.begin == 0 && seg.begin == 0});
      if (m.pre_tokenizer != nullptr) m.pre_tokenizer->pre_tokenize(words);
      for (const tok::PreToken& w : words) m.model->encode_word(w.text, ids, scratch);
    }
  }
  if (add_special_tokens) ids.insert(ids.end(), m.frame.suffix.begin(), m.frame.suffix.end());
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  const Impl& m = *impl_;
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const int32_t id : ids) {
    // Unknown ids (e.g. padding rows of a larger embedding) are skipped, as in HF.
    if (id < 0 || id >= vocab_size() || m.id_to_token[id].empty()) continue;
    if (skip_special_tokens && m.is_special[id]) continue;
    tokens.push_back(m.id_to_token[id]);
  }
  if (m.decoder != nullptr) {
    m.decoder->decode_chain(tokens);
    std::string text;
    for (const auto& t : tokens) text.append(t);
    return text;
  }
  std::string text;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i > 0) text.push_back(' ');
    text.append(tokens[i]);
  }
  return text;
}

int64_t Tokenizer::vocab_size() const { return static_cast<int64_t>(impl_->id_to_token.size()); }

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  return impl_->token_to_id(token);
}

std::string_view Tokenizer::id_to_token(int32_t id) const {
  DSPARK_CHECK(id >= 0 && id < vocab_size(), "token id {} is out of range [0, {})", id,
               vocab_size());
  return impl_->id_to_token[id];
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && id < vocab_size() && impl_->is_special[id] != 0;
}

int32_t Tokenizer::bos_id() const { return impl_->bos_id; }

const std::vector<int32_t>& Tokenizer::eos_ids() const { return impl_->eos_ids; }

}  // namespace dspark
