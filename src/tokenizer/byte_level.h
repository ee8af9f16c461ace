// GPT-2's reversible byte <-> character alphabet used by byte-level BPE: the printable
// bytes ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) stand for themselves, the other 68 bytes map
// in order to U+0100, U+0101, ... so that every byte becomes a visible character and
// vocabulary entries are plain strings (e.g. ' ' is 'Ġ' U+0120, '\n' is 'Ċ' U+010A).
#pragma once

#include <string>
#include <string_view>

namespace dspark::tok {

// UTF-8 encoding of the character that stands for byte b.
std::string_view byte_level_char(unsigned char b);
// The byte a character stands for, or -1 when cp is not in the alphabet.
int byte_level_byte(char32_t cp);
// Appends the alphabet form of bytes to out.
void byte_level_encode(std::string_view bytes, std::string& out);

}  // namespace dspark::tok
