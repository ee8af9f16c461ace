#include "tokenizer/tokenizer_decoder.h"

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/tokenizer_json.h"
#include "tokenizer/tokenizer_utf8.h"

namespace dspark::tok {

int parse_byte_token(std::string_view token) {
  if (token.size() != 6 || token.substr(0, 3) != "<0x" || token[5] != '>') return -1;
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(token[3]), lo = hex(token[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

namespace {

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& p : parts_) p->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

// Maps alphabet characters back to bytes over the whole sequence; a token holding a
// character outside the alphabet contributes its own bytes. Invalid UTF-8 becomes U+FFFD.
class ByteLevelDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      const size_t mark = bytes.size();
      size_t pos = 0;
      bool ok = true;
      while (pos < t.size()) {
        const int b = byte_level_byte(utf8_next(t, pos));
        if (b < 0) {
          ok = false;
          break;
        }
        bytes.push_back(static_cast<char>(b));
      }
      if (!ok) {
        bytes.resize(mark);
        bytes.append(t);
      }
    }
    std::string text;
    utf8_append_lossy(text, bytes);
    tokens.assign(1, std::move(text));
  }
};

// Runs of <0xNN> tokens become their bytes when those form valid UTF-8, else one U+FFFD
// per byte.
class ByteFallbackDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string run;
    auto flush = [&] {
      if (run.empty()) return;
      if (utf8_is_valid(run)) {
        out.push_back(run);
      } else {
        for (size_t i = 0; i < run.size(); ++i) out.emplace_back(kReplacementChar);
      }
      run.clear();
    };
    for (std::string& t : tokens) {
      const int b = parse_byte_token(t);
      if (b >= 0) {
        run.push_back(static_cast<char>(b));
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens = std::move(out);
  }
};

class FuseDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all.append(t);
    tokens.assign(1, std::move(all));
  }
};

// Removes up to start leading and stop trailing copies of one character from each token.
class StripDecoder final : public Decoder {
 public:
  StripDecoder(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    if (content_.empty()) return;
    for (std::string& t : tokens) {
      size_t begin = 0, end = t.size();
      for (size_t i = 0; i < start_ && t.compare(begin, content_.size(), content_) == 0; ++i) {
        begin += content_.size();
      }
      for (size_t i = 0; i < stop_ && end >= begin + content_.size() &&
                         t.compare(end - content_.size(), content_.size(), content_) == 0;
           ++i) {
        end -= content_.size();
      }
      t = t.substr(begin, end - begin);
    }
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(SplitPatternSpec pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    if (pattern_.regex == nullptr) {
      for (std::string& t : tokens) replace_all(t, pattern_.literal, content_);
      return;
    }
    std::vector<Span> matches;
    for (std::string& t : tokens) {
      matches.clear();
      pattern_.find_all(t, matches);
      if (matches.empty()) continue;
      std::string out;
      size_t pos = 0;
      for (const Span& m : matches) {
        out.append(t, pos, m.begin - pos);
        out.append(content_);
        pos = m.end;
      }
      out.append(t, pos, std::string::npos);
      t = std::move(out);
    }
  }

 private:
  SplitPatternSpec pattern_;
  std::string content_;
};

// Replacement characters become spaces, except in the first token, where they are
// dropped (they were prepended by the pre-tokenizer) unless prepend_scheme is "never".
class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool strip_first)
      : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      replace_all(tokens[i], replacement_, i == 0 && strip_first_ ? "" : " ");
    }
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

}  // namespace

std::unique_ptr<Decoder> make_decoder(const nlohmann::json& j, std::string_view source) {
  if (j.is_null()) return nullptr;
  const std::string type = json_type(j, "decoder", source);
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Decoder>> parts;
    for (const auto& item : j.at("decoders")) {
      auto part = make_decoder(item, source);
      if (part != nullptr) parts.push_back(std::move(part));
    }
    return std::make_unique<SequenceDecoder>(std::move(parts));
  }
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    return std::make_unique<StripDecoder>(j.at("content").get<std::string>(),
                                          j.value("start", size_t{0}), j.value("stop", size_t{0}));
  }
  if (type == "Replace") {
    return std::make_unique<ReplaceDecoder>(SplitPatternSpec::parse(j.at("pattern"), source),
                                            j.at("content").get<std::string>());
  }
  if (type == "Metaspace") {
    bool strip_first = true;
    if (j.contains("prepend_scheme") && j["prepend_scheme"].is_string()) {
      strip_first = j["prepend_scheme"].get<std::string>() != "never";
    }
    if (j.contains("add_prefix_space") && j["add_prefix_space"].is_boolean() &&
        !j["add_prefix_space"].get<bool>()) {
      strip_first = false;
    }
    return std::make_unique<MetaspaceDecoder>(
        j.value("replacement", std::string("\xE2\x96\x81")), strip_first);
  }
  DSPARK_FAIL("{}: unsupported decoder type '{}' (supported: ByteLevel, ByteFallback, Fuse, "
              "Strip, Replace, Metaspace, Sequence)",
              source, type);
}

}  // namespace dspark::tok
