// GPT-2's byte-level alphabet: every byte 0..255 is shown as one printable Unicode
// character, so that byte strings can be stored as JSON strings in tokenizer.json
// (vocabulary keys and merges). Printable Latin-1 bytes map to themselves; the others
// (controls, space, 0x7F-0xA0, 0xAD) map in order to U+0100, U+0101, ...
// This is the mapping Hugging Face's ByteLevel pre-tokenizer and decoder use.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dspark::train {

// The code point that shows byte b.
char32_t byte_to_char(uint8_t b);

// UTF-8 text of the byte-level form of raw bytes ("hello world" -> "helloĠworld").
std::string bytes_to_byte_level(std::string_view bytes);

// Inverse of bytes_to_byte_level; throws dspark::Error on a character outside the alphabet.
std::string byte_level_to_bytes(std::string_view text);

// True when text is well-formed UTF-8 (no overlongs, surrogates or code points > U+10FFFF).
bool is_valid_utf8(std::string_view text);

// Appends the UTF-8 encoding of code point cp.
void append_utf8(std::string& out, char32_t cp);

}  // namespace dspark::train
