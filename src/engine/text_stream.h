// TextStream: turns a growing generated text into what may be shown to the user, given
// the request's stop strings. Text that could still turn out to be the beginning of a
// stop string is held back; once a stop string appears, the text is cut just before it
// (or just after it, keeping it: include_stop_str_in_output) and the stream reports that
// it stopped. The first stop string to start wins; of two starting there, the shorter.
//
// Cost per append is bounded by the new text and the stop strings, never by the text so
// far: a stop string that completes now must end inside the new text, so only the last
// max_stop_len - 1 bytes before it are searched; and the held-back tail only ever shrinks
// from its front (a position that cannot start a stop string now never can), so each
// byte is ruled out once. Callers bound the stop strings themselves (GenerationOptions).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dspark {

class TextStream {
 public:
  explicit TextStream(std::vector<std::string> stop_strings, bool keep_stop_string = false);

  // Appends newly decoded text; returns the text that is now final. After a stop string
  // matched, returns the remainder before it and stopped() becomes true.
  std::string append(std::string_view text);
  // End of generation: releases everything held back (no stop string can complete now).
  std::string finish();

  bool stopped() const { return stopped_; }
  const std::string& text() const { return text_; }  // everything accepted so far, cut at a stop

 private:
  // Whether text_[pos..] is a proper prefix of some stop string (binary search in sorted_).
  bool starts_stop_string(size_t pos) const;

  std::vector<std::string> stop_strings_;  // non-empty, sorted, unique
  size_t max_stop_len_ = 0;
  bool keep_stop_string_ = false;
  std::string text_;
  size_t emitted_ = 0;
  bool stopped_ = false;
};

}  // namespace dspark
