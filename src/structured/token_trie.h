// A byte trie over a set of tokens' byte strings, walked depth first from a grammar state
// (JsonMatcher or SchemaMatcher) to find the tokens whose bytes the state accepts.
//
// Nodes are stored in preorder, one per byte after its parent's prefix, so a subtree is an
// index range [node, subtree_end): the walk is one forward pass that keeps one matcher per
// level (the state after the node's ancestor at that depth), reads each shared prefix
// once, and jumps past the whole subtree of a refused byte. Cost: the number of nodes
// whose parent prefix is accepted, one matcher step each.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "structured/json_matcher.h"
#include "structured/schema_matcher.h"
#include "structured/token_bytes.h"

namespace dspark {

class TokenTrie {
 public:
  TokenTrie() = default;
  // ids: kText tokens of vocabulary, each with non-empty bytes (throws otherwise).
  TokenTrie(const TokenBytes& vocabulary, std::span<const int32_t> ids);

  // Sets (ORs) bit id of mask for every token of the trie that state accepts entirely.
  // mask: [words covering the largest id]. No allocation for tokens of < 256 bytes.
  // Matcher: JsonMatcher, SchemaMatcher, RegexMatcher, GrammarMatcher or GrammarStateRef
  // (instantiated in token_trie.cpp).
  template <class Matcher>
  void allow(const Matcher& state, std::span<uint64_t> mask) const;

  int64_t num_nodes() const { return static_cast<int64_t>(nodes_.size()); }

 private:
  struct Node {
    uint32_t subtree_end;   // first index after this node's subtree
    uint32_t tokens_begin;  // token_ids_[tokens_begin, tokens_end): ids whose bytes end here
    uint32_t tokens_end;
    uint16_t depth;         // prefix length, >= 1 (the root, depth 0, is implicit)
    uint8_t byte;
  };

  std::vector<Node> nodes_;         // [num_nodes] preorder
  std::vector<int32_t> token_ids_;  // [num_tokens] grouped by end node
  int32_t max_token_bytes_ = 0;     // deepest node
};

}  // namespace dspark
