#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/tokenizer_utf8.h"

namespace dspark::tok {
namespace {

bool stands_for_itself(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<std::string, 256> chars;     // [256] byte -> UTF-8 of its character
  std::array<int, 512> bytes;             // [512] code point -> byte, -1 if none
  Tables() {
    bytes.fill(-1);
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      const char32_t cp = stands_for_itself(b) ? static_cast<char32_t>(b) : 256 + next++;
      chars[b] = utf8_encode(cp);
      bytes[cp] = b;
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

std::string_view byte_level_char(unsigned char b) { return tables().chars[b]; }

int byte_level_byte(char32_t cp) { return cp < 512 ? tables().bytes[cp] : -1; }

void byte_level_encode(std::string_view bytes, std::string& out) {
  const Tables& t = tables();
  for (char c : bytes) out.append(t.chars[static_cast<unsigned char>(c)]);
}

}  // namespace dspark::tok
