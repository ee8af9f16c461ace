// Unicode canonical normalization (NFC and NFD) of valid UTF-8 text, for the NFC / NFD
// normalizers of tokenizer.json (Qwen2/Qwen3 use NFC). Tables come from the Unicode
// Character Database via normalizer_nfc_gen.py. nfc() returns text below U+0300 unchanged
// without decoding it (such text is always in NFC), nfd() does the same for ASCII.
#pragma once

#include <string>
#include <string_view>

namespace dspark::tok {

std::string nfc(std::string_view text);
std::string nfd(std::string_view text);

}  // namespace dspark::tok
