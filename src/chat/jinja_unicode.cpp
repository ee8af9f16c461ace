#include "chat/jinja_unicode.h"

namespace dspark::jinja {

char32_t decode_utf8(std::string_view text, size_t pos, size_t& size) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(pos);
  size_t need = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
  if (need <= 1 || pos + need > text.size()) {
    size = 1;
    return lead;
  }
  char32_t cp = lead & (0x7F >> need);
  for (size_t i = 1; i < need; ++i) {
    unsigned char c = byte(pos + i);
    if ((c & 0xC0) != 0x80) {  // broken sequence: take the lead byte alone
      size = 1;
      return lead;
    }
    cp = (cp << 6) | (c & 0x3F);
  }
  size = need;
  return cp;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::vector<size_t> code_point_offsets(std::string_view text) {
  std::vector<size_t> offsets;
  offsets.reserve(text.size() + 1);
  for (size_t pos = 0, size = 0; pos < text.size(); pos += size) {
    offsets.push_back(pos);
    decode_utf8(text, pos, size);
  }
  offsets.push_back(text.size());
  return offsets;
}

int64_t code_point_count(std::string_view text) {
  int64_t count = 0;
  for (unsigned char c : text) count += (c & 0xC0) != 0x80;
  return count;
}

bool is_python_space(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool is_python_printable(char32_t cp) {
  if (cp == ' ') return true;
  if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) return false;  // Cc, Zs, Cf
  if (is_python_space(cp)) return false;                                     // Zs, Zl, Zp
  if ((cp >= 0x200B && cp <= 0x200F) || (cp >= 0x202A && cp <= 0x202E) ||
      (cp >= 0x2060 && cp <= 0x206F) || cp == 0xFEFF || (cp >= 0xFFF9 && cp <= 0xFFFB))
    return false;  // format characters
  if ((cp >= 0xD800 && cp <= 0xDFFF) || (cp >= 0xE000 && cp <= 0xF8FF) || cp > 0x10FFFF) return false;
  if ((cp & 0xFFFE) == 0xFFFE) return false;  // noncharacters
  return true;
}

std::string python_strip(std::string_view text, const std::string* chars, bool left, bool right) {
  std::vector<size_t> offsets = code_point_offsets(text);
  const size_t n = offsets.size() - 1;
  std::vector<char32_t> strip_set;
  if (chars) {
    size_t size = 0;
    for (size_t pos = 0; pos < chars->size(); pos += size) strip_set.push_back(decode_utf8(*chars, pos, size));
  }
  auto strippable = [&](size_t index) {
    size_t size = 0;
    char32_t cp = decode_utf8(text, offsets[index], size);
    if (!chars) return is_python_space(cp);
    for (char32_t c : strip_set) if (c == cp) return true;
    return false;
  };
  size_t begin = 0, end = n;
  if (left) while (begin < end && strippable(begin)) ++begin;
  if (right) while (end > begin && strippable(end - 1)) --end;
  return std::string(text.substr(offsets[begin], offsets[end] - offsets[begin]));
}

char32_t simple_upper(char32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') ? cp - 32 : cp;
  if (cp == 0xB5) return 0x39C;
  if (cp >= 0xE0 && cp <= 0xFE && cp != 0xF7) return cp - 32;
  if (cp == 0xFF) return 0x178;
  if (cp == 0x130) return cp;
  if (cp == 0x131) return 'I';
  if ((cp >= 0x100 && cp <= 0x137) || (cp >= 0x14A && cp <= 0x177)) return (cp & 1) ? cp - 1 : cp;
  if ((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E)) return (cp & 1) ? cp : cp - 1;
  if (cp == 0x17F) return 'S';
  if (cp == 0x3C2) return 0x3A3;
  if (cp >= 0x3B1 && cp <= 0x3C9) return cp - 32;
  if (cp == 0x3AC) return 0x386;
  if (cp >= 0x3AD && cp <= 0x3AF) return cp - 37;
  if (cp == 0x3CC) return 0x38C;
  if (cp == 0x3CD || cp == 0x3CE) return cp - 63;
  if (cp >= 0x430 && cp <= 0x44F) return cp - 32;
  if (cp >= 0x450 && cp <= 0x45F) return cp - 80;
  if (cp >= 0xFF41 && cp <= 0xFF5A) return cp - 32;
  return cp;
}

char32_t simple_lower(char32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 32;
  if (cp == 0x178) return 0xFF;
  if (cp == 0x130 || cp == 0x131) return cp;  // dotted capital I: see append_lower
  if ((cp >= 0x100 && cp <= 0x137) || (cp >= 0x14A && cp <= 0x177)) return (cp & 1) ? cp : cp + 1;
  if ((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E)) return (cp & 1) ? cp + 1 : cp;
  if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) return cp + 32;
  if (cp == 0x386) return 0x3AC;
  if (cp >= 0x388 && cp <= 0x38A) return cp + 37;
  if (cp == 0x38C) return 0x3CC;
  if (cp == 0x38E || cp == 0x38F) return cp + 63;
  if (cp >= 0x410 && cp <= 0x42F) return cp + 32;
  if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
  if (cp >= 0xFF21 && cp <= 0xFF3A) return cp + 32;
  return cp;
}

bool is_cased(char32_t cp) { return simple_upper(cp) != cp || simple_lower(cp) != cp || cp == 0xDF || cp == 0x130; }

namespace {

std::vector<char32_t> decode_all(std::string_view text) {
  std::vector<char32_t> cps;
  for (size_t pos = 0, size = 0; pos < text.size(); pos += size) cps.push_back(decode_utf8(text, pos, size));
  return cps;
}

void append_upper(std::string& out, char32_t cp) {
  if (cp == 0xDF) out += "SS";
  else append_utf8(out, simple_upper(cp));
}

// Greek capital sigma lowercases to final sigma at the end of a word (Python's rule:
// preceded by a cased letter and not followed by one).
char32_t lower_at(const std::vector<char32_t>& cps, size_t i) {
  if (cps[i] != 0x3A3) return simple_lower(cps[i]);
  bool before = i > 0 && is_cased(cps[i - 1]);
  bool after = i + 1 < cps.size() && is_cased(cps[i + 1]);
  return before && !after ? 0x3C2 : 0x3C3;
}

void append_lower(std::string& out, const std::vector<char32_t>& cps, size_t i) {
  if (cps[i] == 0x130) out += "i\xcc\x87";  // "i" + combining dot above, as Python
  else append_utf8(out, lower_at(cps, i));
}

}  // namespace

std::string python_upper(std::string_view text) {
  std::string out;
  for (char32_t cp : decode_all(text)) append_upper(out, cp);
  return out;
}

std::string python_swapcase(std::string_view text) {
  std::vector<char32_t> cps = decode_all(text);
  std::string out;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (simple_lower(cps[i]) != cps[i] || cps[i] == 0x130) append_lower(out, cps, i);
    else append_upper(out, cps[i]);
  }
  return out;
}

std::string python_lower(std::string_view text) {
  std::vector<char32_t> cps = decode_all(text);
  std::string out;
  for (size_t i = 0; i < cps.size(); ++i) append_lower(out, cps, i);
  return out;
}

std::string python_capitalize(std::string_view text) {
  std::vector<char32_t> cps = decode_all(text);
  std::string out;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (i == 0) append_upper(out, cps[0]);
    else append_lower(out, cps, i);
  }
  return out;
}

std::string python_title(std::string_view text) {
  std::vector<char32_t> cps = decode_all(text);
  std::string out;
  bool previous_cased = false;
  for (size_t i = 0; i < cps.size(); ++i) {
    bool cased = is_cased(cps[i]);
    if (!cased) append_utf8(out, cps[i]);
    else if (previous_cased) append_lower(out, cps, i);
    else if (cps[i] == 0xDF) out += "Ss";
    else append_utf8(out, simple_upper(cps[i]));
    previous_cased = cased;
  }
  return out;
}

std::string jinja_title(std::string_view text) {
  std::vector<char32_t> cps = decode_all(text);
  std::string out;
  bool word_start = true;
  for (size_t i = 0; i < cps.size(); ++i) {
    char32_t cp = cps[i];
    if (is_python_space(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<') {
      append_utf8(out, cp);
      word_start = true;
      continue;
    }
    if (word_start) append_upper(out, cp);
    else append_lower(out, cps, i);
    word_start = false;
  }
  return out;
}

}  // namespace dspark::jinja
