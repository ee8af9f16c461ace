#include "data/byte_level.h"

#include "core/check.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer_utf8.h"

namespace dspark::train {

char32_t byte_to_char(uint8_t b) {
  size_t pos = 0;
  return tok::utf8_next(tok::byte_level_char(b), pos);
}

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  tok::byte_level_encode(bytes, out);
  return out;
}

std::string byte_level_to_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto c0 = static_cast<uint8_t>(text[i]);
    char32_t cp = 0;
    if (c0 < 0x80) {
      cp = c0;
      i += 1;
    } else {
      // The alphabet only uses code points below U+0200: two-byte sequences.
      DSPARK_CHECK((c0 & 0xE0) == 0xC0 && i + 1 < text.size(),
                   "byte-level token '{}' has a character outside the byte alphabet", text);
      cp = (static_cast<char32_t>(c0 & 0x1F) << 6) | (static_cast<uint8_t>(text[i + 1]) & 0x3F);
      i += 2;
    }
    const int b = tok::byte_level_byte(cp);
    DSPARK_CHECK(b >= 0, "byte-level token '{}' has character U+{:04X} outside the byte alphabet",
                 text, static_cast<uint32_t>(cp));
    out.push_back(static_cast<char>(b));
  }
  return out;
}

}  // namespace dspark::train
