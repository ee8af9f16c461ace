// TextStream: turns a growing generated text into what may be shown to the user, given
// the request's stop strings. Text that could still turn out to be the beginning of a
// stop string is held back; once a stop string appears, the text is cut just before it
// and the stream reports that it stopped.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dspark {

class TextStream {
 public:
  explicit TextStream(std::vector<std::string> stop_strings);

  // Appends newly decoded text; returns the text that is now final. After a stop string
  // matched, returns the remainder before it and stopped() becomes true.
  std::string append(std::string_view text);
  // End of generation: releases everything held back (no stop string can complete now).
  std::string finish();

  bool stopped() const { return stopped_; }
  const std::string& text() const { return text_; }  // everything accepted so far, cut at a stop

 private:
  std::vector<std::string> stop_strings_;
  size_t max_stop_len_ = 0;
  std::string text_;
  size_t emitted_ = 0;
  bool stopped_ = false;
};

}  // namespace dspark
