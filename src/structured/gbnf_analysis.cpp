#include "structured/gbnf_analysis.h"

#include <algorithm>
#include <functional>
#include <queue>

#include "core/check.h"
#include "tokenizer/tokenizer_utf8.h"

namespace dspark::gbnf {

ShortestDerivations shortest_derivations(const Rules& rules) {
  const size_t n = rules.rules.size();
  // Every alternative, numbered: its rule, its references still not final, its length so far.
  struct Alternative {
    int32_t rule;
    int32_t index;    // within its rule
    int32_t missing;  // references to rules whose length is not final yet
    int64_t bytes;    // characters plus the final references' lengths
  };
  std::vector<Alternative> alts;
  std::vector<std::vector<int32_t>> used_by(n);  // [rules] alternatives referring to it, once per reference
  for (size_t r = 0; r < n; ++r) {
    const auto& alternatives = rules.rules[r].alternatives;
    for (size_t a = 0; a < alternatives.size(); ++a) {
      Alternative alt{static_cast<int32_t>(r), static_cast<int32_t>(a), 0, 0};
      for (const Element& e : alternatives[a]) {
        if (e.kind == Element::Kind::kChars) {
          alt.bytes += static_cast<int64_t>(tok::utf8_encode(rules.classes[static_cast<size_t>(e.index)][0].lo).size());
        } else {
          ++alt.missing;
          used_by[static_cast<size_t>(e.index)].push_back(static_cast<int32_t>(alts.size()));
        }
      }
      alts.push_back(alt);
    }
  }
  using Entry = std::pair<int64_t, int32_t>;  // (length, alternative)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  for (size_t i = 0; i < alts.size(); ++i) {
    if (alts[i].missing == 0) ready.push({alts[i].bytes, static_cast<int32_t>(i)});
  }
  ShortestDerivations out{std::vector<int64_t>(n, kNeverEnds), std::vector<int32_t>(n, -1)};
  while (!ready.empty()) {
    const auto [bytes, i] = ready.top();
    ready.pop();
    const size_t r = static_cast<size_t>(alts[static_cast<size_t>(i)].rule);
    if (out.bytes[r] != kNeverEnds) continue;  // already final, through a shorter alternative
    out.bytes[r] = bytes;
    out.alternative[r] = alts[static_cast<size_t>(i)].index;
    for (const int32_t user : used_by[r]) {
      Alternative& u = alts[static_cast<size_t>(user)];
      u.bytes = std::min(u.bytes + bytes, kMaxCountedBytes);
      if (--u.missing == 0 && out.bytes[static_cast<size_t>(u.rule)] == kNeverEnds) ready.push({u.bytes, user});
    }
  }
  return out;
}

void check_no_left_recursion(const Rules& rules, const std::vector<bool>& empty) {
  const size_t n = rules.rules.size();
  struct Edge {
    int32_t to;
    bool grows;  // the reference is not the last of its alternative
  };
  std::vector<std::vector<Edge>> edges(n);
  std::vector<std::vector<int32_t>> reverse(n);
  for (size_t r = 0; r < n; ++r) {
    for (const auto& alt : rules.rules[r].alternatives) {
      for (size_t i = 0; i < alt.size() && alt[i].kind == Element::Kind::kRule; ++i) {
        edges[r].push_back({alt[i].index, i + 1 < alt.size()});
        reverse[static_cast<size_t>(alt[i].index)].push_back(static_cast<int32_t>(r));
        if (!empty[static_cast<size_t>(alt[i].index)]) break;
      }
    }
  }
  // Strongly connected components (Kosaraju's, iterative: rule chains can be long): an edge
  // within one closes a cycle.
  std::vector<int32_t> order;
  std::vector<uint8_t> seen(n, 0);
  std::vector<std::pair<int32_t, size_t>> stack;  // (rule, next edge)
  for (size_t s = 0; s < n; ++s) {
    if (seen[s]) continue;
    seen[s] = 1;
    stack.push_back({static_cast<int32_t>(s), 0});
    while (!stack.empty()) {
      auto& [v, next] = stack.back();
      if (next < edges[static_cast<size_t>(v)].size()) {
        const int32_t w = edges[static_cast<size_t>(v)][next++].to;
        if (!seen[static_cast<size_t>(w)]) {
          seen[static_cast<size_t>(w)] = 1;
          stack.push_back({w, 0});
        }
      } else {
        order.push_back(v);
        stack.pop_back();
      }
    }
  }
  std::vector<int32_t> component(n, -1);
  std::vector<int32_t> todo;
  int32_t components = 0;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (component[static_cast<size_t>(*it)] >= 0) continue;
    component[static_cast<size_t>(*it)] = components;
    todo.assign(1, *it);
    while (!todo.empty()) {
      const int32_t v = todo.back();
      todo.pop_back();
      for (const int32_t w : reverse[static_cast<size_t>(v)]) {
        if (component[static_cast<size_t>(w)] < 0) {
          component[static_cast<size_t>(w)] = components;
          todo.push_back(w);
        }
      }
    }
    ++components;
  }
  for (size_t r = 0; r < n; ++r) {
    for (const Edge& e : edges[r]) {
      DSPARK_CHECK_REQUEST(!e.grows || component[r] != component[static_cast<size_t>(e.to)],
                           "grammar: rule '{}' is left-recursive (it can come back to itself before any "
                           "character is read); write the repetition with * or + instead",
                           rules.rules[r].name);
    }
  }
}

}  // namespace dspark::gbnf
