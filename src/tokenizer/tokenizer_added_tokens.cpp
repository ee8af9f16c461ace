#include "tokenizer/tokenizer_added_tokens.h"

#include <algorithm>

#include "tokenizer/tokenizer_regex.h"
#include "tokenizer/tokenizer_utf8.h"

namespace dspark::tok {
namespace {

uint64_t edge_key(int32_t node, unsigned char byte) {
  return (static_cast<uint64_t>(node) << 8) | byte;
}

// Word characters as Hugging Face's single_word check sees them (regex \w).
bool is_word_char(std::string_view ch) {
  static const Regex word(R"(\A\w)", "added token single_word check");
  return word.search(ch);
}

std::string_view last_char(std::string_view text) {
  if (text.empty()) return text;
  size_t start = text.size() - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  return text.substr(start);
}

// Start of the whitespace run that ends text.
size_t trailing_space_start(std::string_view text) {
  size_t end = text.size();
  while (end > 0) {
    const std::string_view ch = last_char(text.substr(0, end));
    size_t pos = 0;
    if (!is_unicode_whitespace(utf8_next(ch, pos))) break;
    end -= ch.size();
  }
  return end;
}

// Length of the whitespace run that starts text.
size_t leading_space_len(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t next = pos;
    if (!is_unicode_whitespace(utf8_next(text, next))) break;
    pos = next;
  }
  return pos;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens) {
  terminal_.push_back(-1);  // root
  for (const AddedToken& t : tokens) {
    if (t.content.empty()) continue;
    const auto index = static_cast<int32_t>(tokens_.size());
    tokens_.push_back(t);
    first_byte_[static_cast<unsigned char>(t.content[0])] = true;
    int32_t node = 0;
    for (char c : t.content) {
      const uint64_t key = edge_key(node, static_cast<unsigned char>(c));
      auto it = edges_.find(key);
      if (it == edges_.end()) {
        const auto child = static_cast<int32_t>(terminal_.size());
        terminal_.push_back(-1);
        it = edges_.emplace(key, child).first;
      }
      node = it->second;
    }
    // A repeated content keeps its first token.
    if (terminal_[node] < 0) terminal_[node] = index;
  }
}

int32_t AddedTokenMatcher::longest_at(std::string_view text, size_t pos, size_t* len) const {
  int32_t node = 0, best = -1;
  for (size_t i = pos; i < text.size(); ++i) {
    const auto it = edges_.find(edge_key(node, static_cast<unsigned char>(text[i])));
    if (it == edges_.end()) break;
    node = it->second;
    if (terminal_[node] >= 0) {
      best = terminal_[node];
      *len = i + 1 - pos;
    }
  }
  return best;
}

void AddedTokenMatcher::split(std::string_view text, std::vector<Segment>& out) const {
  size_t emitted = 0;  // text before this offset has been handed out
  size_t pos = 0;
  while (pos < text.size()) {
    if (!first_byte_[static_cast<unsigned char>(text[pos])]) {
      ++pos;
      continue;
    }
    size_t len = 0;
    const int32_t index = longest_at(text, pos, &len);
    if (index < 0) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[index];
    size_t start = pos, stop = pos + len;
    pos = stop;
    if (token.single_word) {
      const bool alone_left = start == 0 || !is_word_char(last_char(text.substr(0, start)));
      const bool alone_right = stop == text.size() || !is_word_char(text.substr(stop));
      if (!alone_left || !alone_right) continue;
    }
    if (token.lstrip) start = std::max(trailing_space_start(text.substr(0, start)), emitted);
    if (token.rstrip) stop += leading_space_len(text.substr(stop));
    start = std::max(start, emitted);
    if (start > emitted) out.push_back({emitted, start, -1});
    out.push_back({start, stop, token.id});
    emitted = stop;
    pos = std::max(pos, stop);
  }
  if (emitted < text.size()) out.push_back({emitted, text.size(), -1});
}

}  // namespace dspark::tok
