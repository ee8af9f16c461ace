#include "tokenizer/normalizer_nfc.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer_utf8.h"

namespace dspark::tok {
namespace {

struct CccRange {
  char32_t first, last;
  uint8_t ccc;
};
struct DecompositionEntry {
  char32_t cp;
  uint16_t offset, length;
};
struct CompositionEntry {
  char32_t first, second, composite;
};

#include "tokenizer/normalizer_nfc_data.inc"

// Hangul syllables decompose and compose arithmetically.
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;

struct Tables {
  std::unordered_map<char32_t, DecompositionEntry> decompositions;
  std::unordered_map<uint64_t, char32_t> compositions;
  Tables() {
    decompositions.reserve(std::size(kDecompositions));
    for (const auto& e : kDecompositions) decompositions.emplace(e.cp, e);
    compositions.reserve(std::size(kCompositions));
    for (const auto& e : kCompositions) {
      compositions.emplace((static_cast<uint64_t>(e.first) << 21) | e.second, e.composite);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

uint8_t combining_class(char32_t cp) {
  if (cp < 0x300) return 0;
  const auto* end = std::end(kCccRanges);
  const auto* it = std::upper_bound(std::begin(kCccRanges), end, cp,
                                    [](char32_t c, const CccRange& r) { return c < r.first; });
  if (it == std::begin(kCccRanges)) return 0;
  --it;
  return cp <= it->last ? it->ccc : 0;
}

bool below_combining_range(std::string_view text) {
  // U+0300 is the first code point whose UTF-8 lead byte is 0xCC.
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0xCC; });
}

// Full canonical decomposition followed by canonical ordering of combining marks.
std::vector<char32_t> decompose(std::string_view text) {
  const Tables& t = tables();
  std::vector<char32_t> out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const char32_t cp = utf8_next(text, pos);
    if (cp >= kSBase && cp < kSBase + kSCount) {
      const char32_t s = cp - kSBase;
      out.push_back(kLBase + s / kNCount);
      out.push_back(kVBase + (s % kNCount) / kTCount);
      if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
      continue;
    }
    const auto it = cp < 0xC0 ? t.decompositions.end() : t.decompositions.find(cp);
    if (it == t.decompositions.end()) {
      out.push_back(cp);
    } else {
      const auto& e = it->second;
      out.insert(out.end(), kDecompositionData + e.offset, kDecompositionData + e.offset + e.length);
    }
  }
  // Stable-sort every run of non-starters by combining class.
  for (size_t i = 0; i < out.size();) {
    if (combining_class(out[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < out.size() && combining_class(out[j]) != 0) ++j;
    if (j - i > 1) {
      std::stable_sort(out.begin() + i, out.begin() + j, [](char32_t a, char32_t b) {
        return combining_class(a) < combining_class(b);
      });
    }
    i = j;
  }
  return out;
}

char32_t compose_pair(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount) {
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  }
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount) {
    return a + (b - kTBase);
  }
  const auto& c = tables().compositions;
  const auto it = c.find((static_cast<uint64_t>(a) << 21) | b);
  return it == c.end() ? 0 : it->second;
}

std::string encode(const std::vector<char32_t>& cps) {
  std::string out;
  out.reserve(cps.size() * 2);
  for (char32_t cp : cps) utf8_append(out, cp);
  return out;
}

}  // namespace

std::string nfd(std::string_view text) {
  // Latin-1 letters decompose, so only ASCII is known to be unchanged.
  if (std::all_of(text.begin(), text.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x80; })) {
    return std::string(text);
  }
  return encode(decompose(text));
}

std::string nfc(std::string_view text) {
  if (below_combining_range(text)) return std::string(text);
  std::vector<char32_t> d = decompose(text);
  if (d.empty()) return {};
  // Canonical composition: a mark joins the last starter unless a mark of the same or a
  // higher class stands between them.
  size_t out = 0;
  int64_t starter = combining_class(d[0]) == 0 ? 0 : -1;
  int last_class = combining_class(d[0]) == 0 ? 0 : 256;
  out = 1;
  for (size_t i = 1; i < d.size(); ++i) {
    const char32_t c = d[i];
    const int cc = combining_class(c);
    if (starter >= 0 && (last_class < cc || last_class == 0)) {
      const char32_t composite = compose_pair(d[starter], c);
      if (composite != 0) {
        d[starter] = composite;
        continue;
      }
    }
    if (cc == 0) starter = static_cast<int64_t>(out);
    last_class = cc;
    d[out++] = c;
  }
  d.resize(out);
  return encode(d);
}

}  // namespace dspark::tok
