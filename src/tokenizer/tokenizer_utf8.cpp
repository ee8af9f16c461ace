#include "tokenizer/tokenizer_utf8.h"

namespace dspark::tok {

char32_t utf8_next(std::string_view text, size_t& pos) {
  const auto b0 = static_cast<unsigned char>(text[pos]);
  const int len = utf8_seq_len(b0);
  char32_t cp;
  switch (len) {
    case 1: cp = b0; break;
    case 2: cp = b0 & 0x1Fu; break;
    case 3: cp = b0 & 0x0Fu; break;
    default: cp = b0 & 0x07u; break;
  }
  for (int k = 1; k < len && pos + k < text.size(); ++k) {
    cp = (cp << 6) | (static_cast<unsigned char>(text[pos + k]) & 0x3Fu);
  }
  pos += len;
  return cp;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

int utf8_check_at(std::string_view bytes, size_t pos, int* bad_len) {
  const auto b = static_cast<unsigned char>(bytes[pos]);
  if (b < 0x80) return 1;
  int need;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1;
  } else if (b == 0xE0) {
    need = 2, lo = 0xA0;
  } else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) {
    need = 2;
  } else if (b == 0xED) {
    need = 2, hi = 0x9F;  // excludes surrogates
  } else if (b == 0xF0) {
    need = 3, lo = 0x90;
  } else if (b >= 0xF1 && b <= 0xF3) {
    need = 3;
  } else if (b == 0xF4) {
    need = 3, hi = 0x8F;
  } else {
    *bad_len = 1;
    return 0;
  }
  for (int k = 1; k <= need; ++k) {
    if (pos + k >= bytes.size()) {
      *bad_len = k;
      return 0;
    }
    const auto c = static_cast<unsigned char>(bytes[pos + k]);
    const unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (c < l || c > h) {
      *bad_len = k;
      return 0;
    }
  }
  return need + 1;
}

size_t utf8_find_invalid(std::string_view bytes) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    if (static_cast<unsigned char>(bytes[pos]) < 0x80) {
      ++pos;
      continue;
    }
    int bad = 0;
    const int len = utf8_check_at(bytes, pos, &bad);
    if (len == 0) return pos;
    pos += len;
  }
  return std::string_view::npos;
}

void utf8_append_lossy(std::string& out, std::string_view bytes) {
  size_t pos = 0, run = 0;  // [run, pos) is valid and not yet copied
  while (pos < bytes.size()) {
    if (static_cast<unsigned char>(bytes[pos]) < 0x80) {
      ++pos;
      continue;
    }
    int bad = 0;
    const int len = utf8_check_at(bytes, pos, &bad);
    if (len > 0) {
      pos += len;
      continue;
    }
    out.append(bytes.substr(run, pos - run));
    out.append(kReplacementChar);
    pos += bad;
    run = pos;
  }
  out.append(bytes.substr(run));
}

bool is_unicode_whitespace(char32_t cp) {
  if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
  if (cp < 0x85) return false;
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

size_t utf8_count(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace dspark::tok
