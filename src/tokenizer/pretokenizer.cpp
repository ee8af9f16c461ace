#include "tokenizer/pretokenizer.h"

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer_json.h"

namespace dspark::tok {

SplitBehavior parse_split_behavior(std::string_view name, std::string_view source) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  DSPARK_FAIL("{}: unknown split behavior '{}'", source, name);
}

void split_spans(size_t text_size, const std::vector<Span>& matches, SplitBehavior behavior,
                 bool invert, std::vector<Span>& out) {
  if (text_size == 0) return;
  struct Part {
    Span span;
    bool is_match;
  };
  // The whole text as alternating gaps and matches (empty matches included: they still
  // cut the text where they occur).
  std::vector<Part> parts;
  parts.reserve(2 * matches.size() + 1);
  size_t prev = 0;
  for (const Span& m : matches) {
    if (m.begin != prev) parts.push_back({{prev, m.begin}, invert});
    parts.push_back({m, !invert});
    prev = m.end;
  }
  if (prev != text_size) parts.push_back({{prev, text_size}, invert});

  const size_t first_out = out.size();
  auto emit = [&](Span s) { out.push_back(s); };
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const Part& p : parts) emit(p.span);
      break;
    case SplitBehavior::kRemoved:
      for (const Part& p : parts) {
        if (!p.is_match) emit(p.span);
      }
      break;
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const Part& p : parts) {
        if (p.is_match == previous_match && out.size() > first_out) {
          out.back().end = p.span.end;
        } else {
          emit(p.span);
        }
        previous_match = p.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const Part& p : parts) {
        if (p.is_match && !previous_match && out.size() > first_out) {
          out.back().end = p.span.end;
        } else {
          emit(p.span);
        }
        previous_match = p.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      // Walk right to left so that a match joins the piece after it.
      std::vector<Span> reversed;
      bool previous_match = false;
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (it->is_match && !previous_match && !reversed.empty()) {
          reversed.back().begin = it->span.begin;
        } else {
          reversed.push_back(it->span);
        }
        previous_match = it->is_match;
      }
      out.insert(out.end(), reversed.rbegin(), reversed.rend());
      break;
    }
  }
  // Empty pieces never reach the model.
  size_t keep = first_out;
  for (size_t i = first_out; i < out.size(); ++i) {
    if (out[i].end > out[i].begin) out[keep++] = out[i];
  }
  out.resize(keep);
}

namespace {

constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Applies split_spans with a pattern to every piece.
void split_pieces(std::vector<PreToken>& pieces, const SplitPatternSpec& pattern,
                  SplitBehavior behavior, bool invert) {
  std::vector<PreToken> out;
  out.reserve(pieces.size() * 4);
  std::vector<Span> matches, spans;
  for (PreToken& piece : pieces) {
    matches.clear();
    spans.clear();
    pattern.find_all(piece.text, matches);
    split_spans(piece.text.size(), matches, behavior, invert, spans);
    if (spans.size() == 1 && spans[0].begin == 0 && spans[0].end == piece.text.size()) {
      out.push_back(std::move(piece));
      continue;
    }
    for (const Span& s : spans) {
      out.push_back({piece.text.substr(s.begin, s.end - s.begin), piece.at_start && s.begin == 0});
    }
  }
  pieces = std::move(out);
}

SplitPatternSpec regex_spec(std::string_view pattern, std::string_view source) {
  SplitPatternSpec spec;
  spec.regex = std::make_shared<const Regex>(pattern, source);
  return spec;
}

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts)
      : parts_(std::move(parts)) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    for (const auto& p : parts_) p->pre_tokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(SplitPatternSpec pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    split_pieces(pieces, pattern_, behavior_, invert_);
  }

 private:
  SplitPatternSpec pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex, std::string_view source)
      : add_prefix_space_(add_prefix_space) {
    if (use_regex) gpt2_ = regex_spec(kGpt2Pattern, source);
  }
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    if (add_prefix_space_) {
      for (PreToken& p : pieces) {
        if (p.text.empty() || p.text[0] != ' ') p.text.insert(0, 1, ' ');
      }
    }
    if (gpt2_.regex != nullptr) split_pieces(pieces, gpt2_, SplitBehavior::kIsolated, false);
    std::string mapped;
    for (PreToken& p : pieces) {
      mapped.clear();
      byte_level_encode(p.text, mapped);
      p.text.swap(mapped);
    }
  }

 private:
  bool add_prefix_space_;
  SplitPatternSpec gpt2_;  // regex null when use_regex is false
};

class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  enum class Prepend { kFirst, kNever, kAlways };
  MetaspacePreTokenizer(std::string replacement, Prepend prepend, bool split)
      : replacement_(std::move(replacement)), prepend_(prepend), split_(split) {
    separator_.literal = replacement_;
  }
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    for (PreToken& p : pieces) {
      replace_spaces(p.text);
      const bool starts = p.text.compare(0, replacement_.size(), replacement_) == 0;
      if (!starts && (prepend_ == Prepend::kAlways || (prepend_ == Prepend::kFirst && p.at_start))) {
        p.text.insert(0, replacement_);
      }
    }
    if (split_) split_pieces(pieces, separator_, SplitBehavior::kMergedWithNext, false);
  }

 private:
  void replace_spaces(std::string& text) const {
    if (text.find(' ') == std::string::npos) return;
    std::string out;
    out.reserve(text.size() + 8);
    for (char c : text) {
      if (c == ' ') {
        out.append(replacement_);
      } else {
        out.push_back(c);
      }
    }
    text = std::move(out);
  }

  std::string replacement_;
  Prepend prepend_;
  bool split_;
  SplitPatternSpec separator_;
};

std::unique_ptr<PreTokenizer> make_metaspace(const nlohmann::json& j, std::string_view source) {
  using Prepend = MetaspacePreTokenizer::Prepend;
  Prepend prepend = Prepend::kAlways;
  if (j.contains("prepend_scheme") && j["prepend_scheme"].is_string()) {
    const std::string scheme = j["prepend_scheme"];
    if (scheme == "first") {
      prepend = Prepend::kFirst;
    } else if (scheme == "never") {
      prepend = Prepend::kNever;
    } else if (scheme == "always") {
      prepend = Prepend::kAlways;
    } else {
      DSPARK_FAIL("{}: Metaspace prepend_scheme '{}' is not first/always/never", source, scheme);
    }
  }
  if (j.contains("add_prefix_space") && j["add_prefix_space"].is_boolean() &&
      !j["add_prefix_space"].get<bool>()) {
    prepend = Prepend::kNever;
  }
  const bool split = j.contains("split") && j["split"].is_boolean() ? j["split"].get<bool>() : true;
  return std::make_unique<MetaspacePreTokenizer>(j.value("replacement", std::string("\xE2\x96\x81")),
                                                 prepend, split);
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& j, std::string_view source) {
  if (j.is_null()) return nullptr;
  const std::string type = json_type(j, "pre_tokenizer", source);
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (const auto& item : j.at("pretokenizers")) {
      auto part = make_pre_tokenizer(item, source);
      if (part != nullptr) parts.push_back(std::move(part));
    }
    return std::make_unique<SequencePreTokenizer>(std::move(parts));
  }
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevelPreTokenizer>(j.value("add_prefix_space", true),
                                                   j.value("use_regex", true), source);
  }
  if (type == "Split") {
    return std::make_unique<SplitPreTokenizer>(
        SplitPatternSpec::parse(j.at("pattern"), source),
        parse_split_behavior(j.at("behavior").get<std::string>(), source), j.value("invert", false));
  }
  if (type == "Metaspace") return make_metaspace(j, source);
  if (type == "Digits") {
    return std::make_unique<SplitPreTokenizer>(
        regex_spec(R"(\p{N})", source),
        j.value("individual_digits", false) ? SplitBehavior::kIsolated : SplitBehavior::kContiguous,
        false);
  }
  if (type == "Whitespace") {
    return std::make_unique<SplitPreTokenizer>(regex_spec(R"(\w+|[^\w\s]+)", source),
                                               SplitBehavior::kRemoved, true);
  }
  if (type == "WhitespaceSplit") {
    return std::make_unique<SplitPreTokenizer>(regex_spec(R"(\s)", source), SplitBehavior::kRemoved,
                                               false);
  }
  if (type == "Punctuation") {
    return std::make_unique<SplitPreTokenizer>(
        regex_spec(R"([\p{P}!-/:-@\[-`{-~])", source),
        parse_split_behavior(j.value("behavior", std::string("Isolated")), source), false);
  }
  DSPARK_FAIL("{}: unsupported pre_tokenizer type '{}' (supported: ByteLevel, Split, Metaspace, "
              "Sequence, Digits, Whitespace, WhitespaceSplit, Punctuation)",
              source, type);
}

}  // namespace dspark::tok
