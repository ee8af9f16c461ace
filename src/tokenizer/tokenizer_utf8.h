// UTF-8 primitives shared by the tokenizer stages. Text inside the tokenizer is always
// valid UTF-8 (encode() validates its input once); decoded output is made valid with
// the same replacement rule as Rust's String::from_utf8_lossy (one U+FFFD per maximal
// invalid subpart), so that decode() matches Hugging Face tokenizers byte for byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dspark::tok {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Byte length of the sequence a lead byte announces (1 for ASCII and invalid leads).
inline int utf8_seq_len(unsigned char lead) {
  if (lead < 0xC0) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

// Decodes the code point at text[pos] (valid UTF-8 assumed) and advances pos.
char32_t utf8_next(std::string_view text, size_t& pos);
void utf8_append(std::string& out, char32_t cp);
inline std::string utf8_encode(char32_t cp) {
  std::string s;
  utf8_append(s, cp);
  return s;
}

// Length of the well-formed sequence starting at bytes[pos], or 0 when it is malformed;
// then *bad_len is the length of its maximal invalid subpart (>= 1).
int utf8_check_at(std::string_view bytes, size_t pos, int* bad_len);

// Offset of the first malformed byte, or std::string_view::npos when bytes is valid.
size_t utf8_find_invalid(std::string_view bytes);
inline bool utf8_is_valid(std::string_view bytes) {
  return utf8_find_invalid(bytes) == std::string_view::npos;
}

// Appends bytes to out with every maximal invalid subpart replaced by U+FFFD.
void utf8_append_lossy(std::string& out, std::string_view bytes);

// Unicode White_Space (what Rust's char::is_whitespace and regex \s accept).
bool is_unicode_whitespace(char32_t cp);

// Number of code points in valid UTF-8 text.
size_t utf8_count(std::string_view text);

}  // namespace dspark::tok
