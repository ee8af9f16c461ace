#include "structured/token_trie.h"

#include <algorithm>
#include <array>
#include <limits>
#include <string_view>

#include "core/check.h"
#include "structured/gbnf_grammar.h"
#include "structured/grammar_state_table.h"
#include "structured/regex_dfa.h"

namespace dspark {

TokenTrie::TokenTrie(const TokenBytes& vocabulary, std::span<const int32_t> ids) {
  // Sorted by bytes: equal strings are adjacent and every string comes right after the
  // strings it extends, which is preorder.
  std::vector<int32_t> order(ids.begin(), ids.end());
  const auto& bytes_of = vocabulary.bytes;
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return bytes_of[a] != bytes_of[b] ? bytes_of[a] < bytes_of[b] : a < b;
  });

  std::vector<uint32_t> path;  // [prefix length] node index of each byte of the last string
  std::string_view previous;
  for (const int32_t id : order) {
    DSPARK_CHECK(id >= 0 && id < vocabulary.size() && vocabulary.roles[id] == TokenRole::kText,
                 "TokenTrie: token {} is not a text token", id);
    const std::string_view bytes = bytes_of[id];
    DSPARK_CHECK(!bytes.empty(), "TokenTrie: text token {} has no bytes", id);
    DSPARK_CHECK(bytes.size() <= std::numeric_limits<uint16_t>::max(),
                 "TokenTrie: token {} has {} bytes", id, bytes.size());
    size_t common = 0;
    while (common < bytes.size() && common < previous.size() && bytes[common] == previous[common]) {
      ++common;
    }
    // Close the nodes of the previous string beyond the shared prefix.
    while (path.size() > common) {
      nodes_[path.back()].subtree_end = static_cast<uint32_t>(nodes_.size());
      path.pop_back();
    }
    for (size_t d = common; d < bytes.size(); ++d) {
      path.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back(Node{0, 0, 0, static_cast<uint16_t>(d + 1), static_cast<uint8_t>(bytes[d])});
    }
    // Equal strings are adjacent, so the ids ending at one node are contiguous.
    Node& end = nodes_[path.back()];
    if (end.tokens_begin == end.tokens_end) end.tokens_begin = static_cast<uint32_t>(token_ids_.size());
    token_ids_.push_back(id);
    end.tokens_end = static_cast<uint32_t>(token_ids_.size());
    max_token_bytes_ = std::max(max_token_bytes_, static_cast<int32_t>(bytes.size()));
    previous = bytes;
  }
  while (!path.empty()) {
    nodes_[path.back()].subtree_end = static_cast<uint32_t>(nodes_.size());
    path.pop_back();
  }
}

template <class Matcher>
void TokenTrie::allow(const Matcher& state, std::span<uint64_t> mask) const {
  // levels[d]: the state after the current node's ancestor at depth d (levels[0] = state).
  std::array<Matcher, 256> small;
  std::vector<Matcher> large;
  Matcher* levels = small.data();
  if (max_token_bytes_ >= static_cast<int32_t>(small.size())) {
    large.resize(static_cast<size_t>(max_token_bytes_) + 1);
    levels = large.data();
  }
  levels[0] = state;
  const Node* nodes = nodes_.data();
  const uint32_t num_nodes = static_cast<uint32_t>(nodes_.size());
  for (uint32_t i = 0; i < num_nodes;) {
    const Node& node = nodes[i];
    // On failure levels[depth] is garbage, but the jump lands on a node no deeper than
    // this one, which reads only shallower levels before rewriting this one.
    if (!levels[node.depth - 1].advance_to(node.byte, levels[node.depth])) {
      i = node.subtree_end;  // every token below extends a refused prefix
      continue;
    }
    for (uint32_t k = node.tokens_begin; k < node.tokens_end; ++k) {
      const int32_t id = token_ids_[k];
      mask[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    }
    ++i;
  }
}

template void TokenTrie::allow<JsonMatcher>(const JsonMatcher&, std::span<uint64_t>) const;
template void TokenTrie::allow<SchemaMatcher>(const SchemaMatcher&, std::span<uint64_t>) const;
template void TokenTrie::allow<RegexMatcher>(const RegexMatcher&, std::span<uint64_t>) const;
template void TokenTrie::allow<GrammarMatcher>(const GrammarMatcher&, std::span<uint64_t>) const;
template void TokenTrie::allow<GrammarStateRef>(const GrammarStateRef&, std::span<uint64_t>) const;

}  // namespace dspark
