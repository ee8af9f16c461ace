// SseParser: incremental reader of a text/event-stream body (Server-Sent Events) for the
// load generator. Bytes arrive in arbitrary pieces; each complete event (ended by a
// blank line, "\n" or "\r\n" line endings) that carries data is reported once with its
// data: the "data:" lines' values (one leading space removed) joined by "\n". Comment
// lines (":..."), other fields and events without data are skipped.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace dspark {

class SseParser {
 public:
  using OnData = std::function<void(std::string_view data)>;

  void feed(std::string_view bytes, const OnData& on_data);

 private:
  std::string line_;   // the current unfinished line
  std::string data_;   // data of the current event so far
  bool has_data_ = false;
};

}  // namespace dspark
