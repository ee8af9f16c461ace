// GPT-2's byte-level alphabet as the tokenizer trainer uses it: every byte 0..255 is shown
// as one printable Unicode character, so that byte strings can be stored as JSON strings in
// tokenizer.json (vocabulary keys and merges). The alphabet itself is the engine's
// (tokenizer/byte_level.h), so a trained tokenizer.json reads back exactly as the engine reads it.
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

}  // namespace dspark::train
