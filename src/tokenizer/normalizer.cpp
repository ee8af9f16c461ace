#include "tokenizer/normalizer.h"

#include <vector>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/normalizer_nfc.h"
#include "tokenizer/tokenizer_json.h"
#include "tokenizer/tokenizer_regex.h"
#include "tokenizer/tokenizer_utf8.h"

namespace dspark::tok {

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  if (from.empty() || text.find(from) == std::string::npos) return;
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  size_t pos = 0;
  for (size_t hit; (hit = text.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(text, pos, hit - pos);
    out.append(to);
  }
  out.append(text, pos, std::string::npos);
  text = std::move(out);
}

namespace {

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts)
      : parts_(std::move(parts)) {}
  void normalize(std::string& text) const override {
    for (const auto& p : parts_) p->normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

// Prepend/Append leave an empty piece empty, as Hugging Face does.
class PrependNormalizer final : public Normalizer {
 public:
  PrependNormalizer(std::string s, bool append) : s_(std::move(s)), append_(append) {}
  void normalize(std::string& text) const override {
    if (text.empty()) return;
    if (append_) {
      text.append(s_);
    } else {
      text.insert(0, s_);
    }
  }

 private:
  std::string s_;
  bool append_;
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(const nlohmann::json& j, std::string_view source)
      : pattern_(SplitPatternSpec::parse(j.at("pattern"), source)),
        content_(j.at("content").get<std::string>()) {}
  void normalize(std::string& text) const override {
    if (pattern_.regex == nullptr) {
      replace_all(text, pattern_.literal, content_);
      return;
    }
    std::vector<Span> matches;
    pattern_.regex->find_all(text, matches);
    if (matches.empty()) return;
    std::string out;
    size_t pos = 0;
    for (const Span& m : matches) {
      out.append(text, pos, m.begin - pos);
      out.append(content_);
      pos = m.end;
    }
    out.append(text, pos, std::string::npos);
    text = std::move(out);
  }

 private:
  SplitPatternSpec pattern_;
  std::string content_;
};

class UnicodeNormalizer final : public Normalizer {
 public:
  explicit UnicodeNormalizer(bool compose) : compose_(compose) {}
  void normalize(std::string& text) const override {
    text = compose_ ? nfc(text) : nfd(text);
  }

 private:
  bool compose_;
};

// Bytes to GPT-2's byte alphabet, before pre-tokenization instead of after it.
class ByteLevelNormalizer final : public Normalizer {
 public:
  void normalize(std::string& text) const override {
    std::string out;
    byte_level_encode(text, out);
    text = std::move(out);
  }
};

class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& text) const override {
    size_t begin = 0, end = text.size();
    if (left_) {
      while (begin < end) {
        size_t next = begin;
        if (!is_unicode_whitespace(utf8_next(text, next))) break;
        begin = next;
      }
    }
    if (right_) {
      while (end > begin) {
        size_t start = end - 1;
        while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
        size_t next = start;
        if (!is_unicode_whitespace(utf8_next(text, next))) break;
        end = start;
      }
    }
    text = text.substr(begin, end - begin);
  }

 private:
  bool left_, right_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& j, std::string_view source) {
  if (j.is_null()) return nullptr;
  const std::string type = json_type(j, "normalizer", source);
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (const auto& item : j.at("normalizers")) {
      auto part = make_normalizer(item, source);
      if (part != nullptr) parts.push_back(std::move(part));
    }
    return std::make_unique<SequenceNormalizer>(std::move(parts));
  }
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(j.at("prepend"), false);
  if (type == "Append") return std::make_unique<PrependNormalizer>(j.at("append"), true);
  if (type == "Replace") return std::make_unique<ReplaceNormalizer>(j, source);
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(true);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(false);
  if (type == "ByteLevel") return std::make_unique<ByteLevelNormalizer>();
  if (type == "Strip") {
    return std::make_unique<StripNormalizer>(j.value("strip_left", true),
                                             j.value("strip_right", true));
  }
  DSPARK_FAIL("{}: unsupported normalizer type '{}' (supported: Sequence, Prepend, Append, "
              "Replace, NFC, NFD, Strip, ByteLevel)",
              source, type);
}

}  // namespace dspark::tok
