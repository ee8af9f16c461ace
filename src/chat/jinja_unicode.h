// UTF-8 helpers for Python string semantics: Python strings are sequences of code points,
// so len(), indexing, slicing and strip() work on code points, not bytes. Invalid UTF-8
// bytes are treated as one code point each (U+FFFD-like) so that nothing throws.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dspark::jinja {

// Decodes the code point starting at text[pos]; sets `size` to its byte length.
char32_t decode_utf8(std::string_view text, size_t pos, size_t& size);
void append_utf8(std::string& out, char32_t cp);

// Byte offsets of each code point start, plus text.size() at the end.
std::vector<size_t> code_point_offsets(std::string_view text);
int64_t code_point_count(std::string_view text);

// str.isspace() / str.isprintable() of one code point (the Unicode tables of CPython for
// the code points chat text contains; rarer categories are approximated).
bool is_python_space(char32_t cp);
bool is_python_printable(char32_t cp);

// str.strip() / lstrip() / rstrip(): whitespace when `chars` is null, else any code point
// of *chars.
std::string python_strip(std::string_view text, const std::string* chars, bool left, bool right);

// Case mapping as Python's str methods, for ASCII, Latin-1, Latin Extended-A, Greek,
// Cyrillic and fullwidth Latin (other scripts have no case here and are kept as they are).
char32_t simple_upper(char32_t cp);
char32_t simple_lower(char32_t cp);
bool is_cased(char32_t cp);
std::string python_upper(std::string_view text);       // str.upper() ("ß" -> "SS")
std::string python_lower(std::string_view text);       // str.lower() (final sigma included)
std::string python_capitalize(std::string_view text);  // str.capitalize()
std::string python_title(std::string_view text);       // str.title()
std::string python_swapcase(std::string_view text);    // str.swapcase()
// Jinja's title filter: the first character of each word (split at whitespace and
// - ( { [ <) uppercased, the rest lowercased.
std::string jinja_title(std::string_view text);

}  // namespace dspark::jinja
