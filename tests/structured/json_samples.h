// Test inputs for the JSON constraint: random valid JSON objects that exercise every part
// of the grammar (nesting, whitespace, escapes, surrogate pairs, raw UTF-8 of every length,
// numbers of every shape, literals), and the tokenizers of real models.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"

namespace dspark::test {

// nlohmann refuses numbers beyond double's range (1e999), which RFC 8259 leaves to the
// implementation and the matcher accepts. Exponent digits (after e/E and a sign, outside
// strings) become '0' for the oracle: that keeps every text exactly as valid as it was.
inline std::string tame_exponents(std::string text) {
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == 'e' || c == 'E') {
      size_t j = i + 1;
      if (j < text.size() && (text[j] == '+' || text[j] == '-')) ++j;
      for (; j < text.size() && text[j] >= '0' && text[j] <= '9'; ++j) text[j] = '0';
    }
  }
  return text;
}

// The tests' oracle: text is one JSON object for nlohmann::json (exponents tamed).
inline bool parses_as_object(const std::string& text) {
  try {
    return nlohmann::json::parse(tame_exponents(text)).is_object();
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

class RandomJson {
 public:
  // Whitespace runs stay within max_whitespace_run; nesting within max_depth (top = 1).
  RandomJson(uint64_t seed, int max_depth = 5, int max_whitespace_run = 3)
      : rng_(seed), max_depth_(max_depth), max_ws_(max_whitespace_run) {}

  std::string object() {
    std::string out;
    ws(out);
    object(out, 1);
    return out;
  }

 private:
  size_t pick(size_t n) { return static_cast<size_t>(rng_() % n); }

  void ws(std::string& out) {
    if (max_ws_ == 0 || pick(3) != 0) return;
    const size_t n = 1 + pick(static_cast<size_t>(max_ws_));
    for (size_t i = 0; i < n; ++i) out.push_back(" \t\n\r"[pick(4)]);
  }

  void object(std::string& out, int depth) {
    out.push_back('{');
    ws(out);
    const size_t n = pick(4);
    for (size_t i = 0; i < n; ++i) {
      if (i > 0) {
        out.push_back(',');
        ws(out);
      }
      string(out);
      ws(out);
      out.push_back(':');
      ws(out);
      value(out, depth);
      ws(out);
    }
    out.push_back('}');
  }

  void array(std::string& out, int depth) {
    out.push_back('[');
    ws(out);
    const size_t n = pick(4);
    for (size_t i = 0; i < n; ++i) {
      if (i > 0) {
        out.push_back(',');
        ws(out);
      }
      value(out, depth);
      ws(out);
    }
    out.push_back(']');
  }

  // depth: that of the container the value sits in.
  void value(std::string& out, int depth) {
    const size_t kind = pick(depth < max_depth_ ? 7 : 5);
    switch (kind) {
      case 0: string(out); break;
      case 1: number(out); break;
      case 2: out += "true"; break;
      case 3: out += pick(2) ? "false" : "null"; break;
      case 4: string(out); break;
      case 5: object(out, depth + 1); break;
      default: array(out, depth + 1); break;
    }
  }

  void string(std::string& out) {
    static const char* const kPieces[] = {
        "a", "key", " ", "Z9", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t",
        "\\u0041", "\\u00e9", "\\uFFFF", "\\u0000", "\\uD83D\\uDE00", "\\udbff\\udfff",
        "\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80", "\xF4\x8F\xBF\xBF", "\x7F", "{}[],:",
        "true", "-1.5e3",
    };
    out.push_back('"');
    const size_t n = pick(6);
    for (size_t i = 0; i < n; ++i) out += kPieces[pick(std::size(kPieces))];
    out.push_back('"');
  }

  void number(std::string& out) {
    if (pick(2)) out.push_back('-');
    if (pick(4) == 0) {
      out.push_back('0');
    } else {
      out.push_back(static_cast<char>('1' + pick(9)));
      for (size_t i = pick(5); i > 0; --i) out.push_back(static_cast<char>('0' + pick(10)));
    }
    if (pick(3) == 0) {
      out.push_back('.');
      for (size_t i = 1 + pick(4); i > 0; --i) out.push_back(static_cast<char>('0' + pick(10)));
    }
    if (pick(3) == 0) {
      out.push_back(pick(2) ? 'e' : 'E');
      const size_t sign = pick(3);
      if (sign == 1) out.push_back('+');
      if (sign == 2) out.push_back('-');
      // At most two digits: nlohmann (the tests' oracle) refuses numbers beyond double.
      for (size_t i = 1 + pick(2); i > 0; --i) out.push_back(static_cast<char>('0' + pick(10)));
    }
  }

  std::mt19937_64 rng_;
  int max_depth_;
  int max_ws_;
};

// Tokenizer directories/files of real models; tests skip those that are absent.
inline std::filesystem::path tiny_target_dir() {
  return std::filesystem::path(DSPARK_SOURCE_DIR) / "models/tiny-target";
}
inline std::filesystem::path stories260k_dir() {
  return std::filesystem::path(DSPARK_SHARED_DIR) / "data/models/stories260K-hf";
}
inline std::filesystem::path gpt2_tokenizer_json() {
  return std::filesystem::path(DSPARK_SHARED_DIR) / "data/tokenizers/gpt-2/tokenizer.json";
}
inline std::filesystem::path llama_spm_tokenizer_json() {
  return std::filesystem::path(DSPARK_SHARED_DIR) / "data/tokenizers/llama-spm/tokenizer.json";
}

// The ids that end a request: the tokenizer's EOS ids, or GPT-2's <|endoftext|> for a bare
// tokenizer.json that names none.
inline std::vector<int32_t> eos_of(const Tokenizer& tok) {
  if (!tok.eos_ids().empty()) return tok.eos_ids();
  if (auto id = tok.token_to_id("<|endoftext|>")) return {*id};
  return {};
}

}  // namespace dspark::test
