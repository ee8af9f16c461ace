#include "engine/text_stream.h"

#include <algorithm>

namespace dspark {

TextStream::TextStream(std::vector<std::string> stop_strings, bool keep_stop_string)
    : stop_strings_(std::move(stop_strings)), keep_stop_string_(keep_stop_string) {
  std::erase_if(stop_strings_, [](const std::string& s) { return s.empty(); });
  std::sort(stop_strings_.begin(), stop_strings_.end());
  stop_strings_.erase(std::unique(stop_strings_.begin(), stop_strings_.end()), stop_strings_.end());
  for (const auto& s : stop_strings_) max_stop_len_ = std::max(max_stop_len_, s.size());
}

std::string TextStream::append(std::string_view text) {
  if (stopped_) return {};
  const size_t old_size = text_.size();
  text_.append(text);
  // Only a stop string that ends inside the new text can be new; search from just before it.
  const size_t search_from = old_size >= max_stop_len_ ? old_size - max_stop_len_ + 1 : 0;
  size_t cut = std::string::npos, cut_length = 0;
  for (const auto& stop : stop_strings_) {
    const size_t pos = text_.find(stop, search_from);
    if (pos < cut || (pos == cut && stop.size() < cut_length)) {
      cut = pos;
      cut_length = stop.size();
    }
  }
  if (cut != std::string::npos) {
    text_.resize(std::max(keep_stop_string_ ? cut + cut_length : cut, emitted_));
    stopped_ = true;
    return finish();
  }
  // Hold back the longest suffix that is a proper prefix of some stop string. It starts at
  // or after emitted_ (everything before was ruled out for good) and is shorter than the
  // longest stop string; the first position that can start a stop string begins it.
  size_t hold_from = std::max(emitted_, text_.size() - std::min(text_.size(), max_stop_len_ - 1));
  while (hold_from < text_.size() && !starts_stop_string(hold_from)) ++hold_from;
  const size_t hold = text_.size() - hold_from;
  const size_t safe = std::max(emitted_, text_.size() - hold);
  std::string out = text_.substr(emitted_, safe - emitted_);
  emitted_ = safe;
  return out;
}

bool TextStream::starts_stop_string(size_t pos) const {
  const std::string_view tail = std::string_view(text_).substr(pos);
  // The first stop string not less than tail is the only candidate that can begin with it.
  auto it = std::lower_bound(stop_strings_.begin(), stop_strings_.end(), tail,
                             [](const std::string& s, std::string_view t) { return std::string_view(s) < t; });
  if (it != stop_strings_.end() && *it == tail) ++it;  // a whole stop string would have matched already
  return it != stop_strings_.end() && it->size() > tail.size() && std::string_view(*it).substr(0, tail.size()) == tail;
}

std::string TextStream::finish() {
  std::string out = text_.substr(emitted_);
  emitted_ = text_.size();
  return out;
}

}  // namespace dspark
