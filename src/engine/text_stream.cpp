#include "engine/text_stream.h"

#include <algorithm>

namespace dspark {

TextStream::TextStream(std::vector<std::string> stop_strings) : stop_strings_(std::move(stop_strings)) {
  std::erase_if(stop_strings_, [](const std::string& s) { return s.empty(); });
  for (const auto& s : stop_strings_) max_stop_len_ = std::max(max_stop_len_, s.size());
}

std::string TextStream::append(std::string_view text) {
  if (stopped_) return {};
  const size_t old_size = text_.size();
  text_.append(text);
  // Only a stop string that ends inside the new text can be new; search from just before it.
  const size_t search_from = old_size >= max_stop_len_ ? old_size - max_stop_len_ + 1 : 0;
  size_t cut = std::string::npos;
  for (const auto& stop : stop_strings_) {
    const size_t pos = text_.find(stop, search_from);
    if (pos != std::string::npos) cut = std::min(cut, pos);
  }
  if (cut != std::string::npos) {
    text_.resize(std::max(cut, emitted_));
    stopped_ = true;
    return finish();
  }
  // Hold back the longest suffix that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const auto& stop : stop_strings_) {
    for (size_t len = std::min(stop.size() - 1, text_.size()); len > hold; --len) {
      if (std::string_view(text_).substr(text_.size() - len) == std::string_view(stop).substr(0, len)) {
        hold = len;
        break;
      }
    }
  }
  const size_t safe = std::max(emitted_, text_.size() - hold);
  std::string out = text_.substr(emitted_, safe - emitted_);
  emitted_ = safe;
  return out;
}

std::string TextStream::finish() {
  std::string out = text_.substr(emitted_);
  emitted_ = text_.size();
  return out;
}

}  // namespace dspark
