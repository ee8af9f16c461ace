// Added tokens of tokenizer.json ("added_tokens"): strings such as "<|endoftext|>" or
// "<s>" that are cut out of the text before the model sees it. Matching is leftmost-
// longest over all tokens of one group; a match of a single_word token is dropped unless
// it stands alone as a word, lstrip/rstrip tokens also swallow the whitespace on their
// left/right. Tokens with normalized=false are matched in the raw text, the others in
// each normalized piece (the encoder runs the two groups in that order).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dspark::tok {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
  bool normalized = false;
};

// A piece of text: plain text (id -1) or an added token.
struct Segment {
  size_t begin = 0;
  size_t end = 0;
  int32_t id = -1;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(const std::vector<AddedToken>& tokens);

  bool empty() const { return tokens_.empty(); }
  // Appends the segments of text to out, in order. Plain segments are non-empty; text
  // swallowed by lstrip/rstrip belongs to the token's segment.
  void split(std::string_view text, std::vector<Segment>& out) const;

 private:
  // Longest token starting at pos: its index in tokens_ and length, or -1.
  int32_t longest_at(std::string_view text, size_t pos, size_t* len) const;

  std::vector<AddedToken> tokens_;
  std::array<bool, 256> first_byte_{};                  // [256] some token starts with it
  std::vector<int32_t> terminal_;                       // [num_nodes] token index or -1
  std::unordered_map<uint64_t, int32_t> edges_;         // (node << 8 | byte) -> child node
};

}  // namespace dspark::tok
