#include "structured/regex_dfa.h"

#include <algorithm>
#include <array>
#include <deque>
#include <unordered_map>
#include <utility>

#include "core/check.h"
#include "structured/regex_parser.h"
#include "tokenizer/tokenizer_utf8.h"

namespace dspark {
namespace {

using regex::CodeRange;
using regex::Node;
using regex::Tree;

using ByteRange = std::pair<uint8_t, uint8_t>;  // inclusive
using ByteSequence = std::vector<ByteRange>;

int utf8_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// The byte-range sequences whose strings are exactly the UTF-8 encodings of [lo, hi]
// (surrogates left out). A range is split until, at every position, its encodings' bytes
// form a range independent of the other positions: within one encoded length, and at each
// level of 6 bits either sharing the bits above it or covering all values below.
std::vector<ByteSequence> utf8_sequences(CodeRange range) {
  std::vector<ByteSequence> out;
  std::vector<CodeRange> todo{range};
  while (!todo.empty()) {
    const CodeRange r = todo.back();
    todo.pop_back();
    if (r.lo > r.hi) continue;
    if (r.lo <= 0xDFFF && r.hi >= 0xD800) {
      if (r.lo < 0xD800) todo.push_back({r.lo, 0xD7FF});
      if (r.hi > 0xDFFF) todo.push_back({0xE000, r.hi});
      continue;
    }
    bool split = false;
    for (const uint32_t bound : {0x7Fu, 0x7FFu, 0xFFFFu}) {
      if (r.lo <= bound && r.hi > bound) {
        todo.push_back({r.lo, bound});
        todo.push_back({bound + 1, r.hi});
        split = true;
        break;
      }
    }
    const int n = utf8_length(r.lo);
    for (int i = 1; i < n && !split; ++i) {
      const uint32_t low = (1u << (6 * i)) - 1;
      if ((r.lo & ~low) == (r.hi & ~low)) continue;
      if ((r.lo & low) != 0) {
        todo.push_back({r.lo, r.lo | low});
        todo.push_back({(r.lo | low) + 1, r.hi});
        split = true;
      } else if ((r.hi & low) != low) {
        todo.push_back({r.lo, (r.hi & ~low) - 1});
        todo.push_back({r.hi & ~low, r.hi});
        split = true;
      }
    }
    if (split) continue;
    const std::string a = tok::utf8_encode(r.lo), b = tok::utf8_encode(r.hi);
    ByteSequence seq;
    for (int i = 0; i < n; ++i) {
      const auto k = static_cast<size_t>(i);
      seq.emplace_back(static_cast<uint8_t>(a[k]), static_cast<uint8_t>(b[k]));
    }
    out.push_back(std::move(seq));
  }
  return out;
}

struct NfaState {
  std::vector<int32_t> eps;
  ByteRange bytes{1, 0};  // empty (lo > hi): no byte edge
  int32_t to = -1;
};

// Thompson's construction: each node becomes a fragment with one entry and one exit.
class NfaBuilder {
 public:
  struct Fragment {
    int32_t in;
    int32_t out;
  };

  explicit NfaBuilder(const Tree& tree) : tree_(tree) {}

  Fragment build(int32_t index) {
    const Node& node = tree_.nodes[static_cast<size_t>(index)];
    switch (node.kind) {
      case Node::Kind::kEmpty: {
        const int32_t s = add();
        return {s, s};
      }
      case Node::Kind::kSet: {
        const Fragment f{add(), add()};
        for (const CodeRange r : node.set)
          for (const ByteSequence& seq : utf8_sequences(r)) {
            int32_t at = add();
            link(f.in, at);
            for (size_t i = 0; i < seq.size(); ++i) {
              const int32_t to = i + 1 == seq.size() ? f.out : add();
              states_[static_cast<size_t>(at)].bytes = seq[i];
              states_[static_cast<size_t>(at)].to = to;
              at = to;
            }
          }
        return f;
      }
      case Node::Kind::kConcat: {
        Fragment f = build(node.children[0]);
        for (size_t i = 1; i < node.children.size(); ++i) {
          const Fragment next = build(node.children[i]);
          link(f.out, next.in);
          f.out = next.out;
        }
        return f;
      }
      case Node::Kind::kAlternate: {
        const Fragment f{add(), add()};
        for (const int32_t child : node.children) {
          const Fragment c = build(child);
          link(f.in, c.in);
          link(c.out, f.out);
        }
        return f;
      }
      case Node::Kind::kRepeat: {
        const int32_t in = add();
        int32_t at = in;
        for (int32_t i = 0; i < node.min; ++i) {
          const Fragment c = build(node.children[0]);
          link(at, c.in);
          at = c.out;
        }
        const int32_t out = add();
        if (node.max < 0) {  // a loop: at -> child -> at, or on to out
          const Fragment c = build(node.children[0]);
          link(at, c.in);
          link(c.out, at);
        } else {  // each further copy optional, and only after the one before it
          for (int32_t i = node.min; i < node.max; ++i) {
            link(at, out);
            const Fragment c = build(node.children[0]);
            link(at, c.in);
            at = c.out;
          }
        }
        link(at, out);
        return {in, out};
      }
    }
    DSPARK_FAIL("regex: bad tree node");
  }

  std::vector<NfaState>& states() { return states_; }

 private:
  int32_t add() {
    DSPARK_CHECK_REQUEST(static_cast<int64_t>(states_.size()) < CompiledRegex::kMaxNfaStates,
                         "regex: too large (more than {} automaton states before determinization; lower the "
                         "repetition counts)", CompiledRegex::kMaxNfaStates);
    states_.emplace_back();
    return static_cast<int32_t>(states_.size()) - 1;
  }
  void link(int32_t from, int32_t to) { states_[static_cast<size_t>(from)].eps.push_back(to); }

  const Tree& tree_;
  std::vector<NfaState> states_;
};

// Subset construction over byte classes: [num_states][num_classes] transitions (state 0
// the start) and the accepting flags. Dead ends are still in; compile() prunes them.
struct RawDfa {
  std::array<uint8_t, 256> class_of{};
  int32_t num_classes = 0;
  std::vector<int32_t> next;
  std::vector<uint8_t> accepting;
};

struct SetHash {
  size_t operator()(const std::vector<int32_t>& v) const {
    size_t h = v.size();
    for (const int32_t x : v) h = (h ^ static_cast<size_t>(x)) * 0x100000001b3ull;
    return h;
  }
};

RawDfa determinize(const std::vector<NfaState>& nfa, int32_t start, int32_t final_state) {
  RawDfa dfa;
  // Bytes that no edge tells apart share a class: one transition computed per class.
  std::array<bool, 257> cut{};
  for (const NfaState& s : nfa) {
    if (s.to < 0) continue;
    cut[s.bytes.first] = true;
    cut[static_cast<size_t>(s.bytes.second) + 1] = true;
  }
  std::vector<uint8_t> representative;
  for (int b = 0; b < 256; ++b) {
    if (b == 0 || cut[static_cast<size_t>(b)]) representative.push_back(static_cast<uint8_t>(b));
    dfa.class_of[static_cast<size_t>(b)] = static_cast<uint8_t>(representative.size() - 1);
  }
  const size_t num_classes = representative.size();
  dfa.num_classes = static_cast<int32_t>(num_classes);
  std::vector<uint32_t> seen(nfa.size(), 0);
  uint32_t generation = 0;
  std::vector<int32_t> stack;
  auto closure = [&](std::vector<int32_t> set) {
    ++generation;
    stack = set;
    for (const int32_t s : set) seen[static_cast<size_t>(s)] = generation;
    while (!stack.empty()) {
      const int32_t s = stack.back();
      stack.pop_back();
      for (const int32_t t : nfa[static_cast<size_t>(s)].eps) {
        if (seen[static_cast<size_t>(t)] == generation) continue;
        seen[static_cast<size_t>(t)] = generation;
        set.push_back(t);
        stack.push_back(t);
      }
    }
    // Only states with a byte edge, and the final one, tell sets apart.
    std::erase_if(set, [&](int32_t s) { return nfa[static_cast<size_t>(s)].to < 0 && s != final_state; });
    std::sort(set.begin(), set.end());
    return set;
  };
  std::unordered_map<std::vector<int32_t>, int32_t, SetHash> ids;
  std::vector<const std::vector<int32_t>*> sets;  // [dfa state] its NFA set (a key of ids)
  auto id_of = [&](std::vector<int32_t> set) {
    if (set.empty()) return CompiledRegex::kDead;
    const auto [it, inserted] = ids.try_emplace(std::move(set), static_cast<int32_t>(sets.size()));
    if (inserted) {
      DSPARK_CHECK_REQUEST(static_cast<int64_t>(sets.size()) < CompiledRegex::kMaxDfaStates,
                           "regex: too complex (more than {} automaton states)", CompiledRegex::kMaxDfaStates);
      dfa.accepting.push_back(std::binary_search(it->first.begin(), it->first.end(), final_state) ? 1 : 0);
      sets.push_back(&it->first);
    }
    return it->second;
  };
  id_of(closure({start}));
  std::vector<std::vector<int32_t>> moved(num_classes);
  for (size_t d = 0; d < sets.size(); ++d) {
    for (auto& m : moved) m.clear();
    for (const int32_t s : *sets[d]) {  // each edge's target joins every class its range covers
      const NfaState& n = nfa[static_cast<size_t>(s)];
      if (n.to < 0) continue;
      for (size_t c = dfa.class_of[n.bytes.first]; c <= dfa.class_of[n.bytes.second]; ++c) moved[c].push_back(n.to);
    }
    dfa.next.resize((d + 1) * num_classes);
    for (size_t c = 0; c < num_classes; ++c) {
      dfa.next[d * num_classes + c] = moved[c].empty() ? CompiledRegex::kDead : id_of(closure(moved[c]));
    }
  }
  return dfa;
}

}  // namespace

std::shared_ptr<const CompiledRegex> CompiledRegex::compile(std::string_view pattern) {
  const Tree tree = regex::parse_regex(pattern);
  NfaBuilder builder(tree);
  const NfaBuilder::Fragment whole = builder.build(tree.root);
  const RawDfa raw = determinize(builder.states(), whole.in, whole.out);
  const auto num_raw = static_cast<int32_t>(raw.accepting.size());
  const auto num_classes = static_cast<size_t>(raw.num_classes);
  auto raw_next = [&](int32_t s, size_t c) { return raw.next[static_cast<size_t>(s) * num_classes + c]; };

  // Live states: an accepting state is reachable from them.
  std::vector<std::vector<int32_t>> into(static_cast<size_t>(num_raw));
  for (int32_t s = 0; s < num_raw; ++s)
    for (size_t c = 0; c < num_classes; ++c) {
      const int32_t t = raw_next(s, c);
      if (t != kDead && (into[static_cast<size_t>(t)].empty() || into[static_cast<size_t>(t)].back() != s))
        into[static_cast<size_t>(t)].push_back(s);
    }
  std::vector<uint8_t> live(static_cast<size_t>(num_raw), 0);
  std::deque<int32_t> queue;
  for (int32_t s = 0; s < num_raw; ++s)
    if (raw.accepting[static_cast<size_t>(s)]) {
      live[static_cast<size_t>(s)] = 1;
      queue.push_back(s);
    }
  while (!queue.empty()) {
    const int32_t t = queue.front();
    queue.pop_front();
    for (const int32_t s : into[static_cast<size_t>(t)])
      if (!live[static_cast<size_t>(s)]) {
        live[static_cast<size_t>(s)] = 1;
        queue.push_back(s);
      }
  }
  DSPARK_CHECK_REQUEST(live[0], "regex: matches no string");

  // Renumber the live states reachable from the start through live states (start = 0).
  std::vector<int32_t> id(static_cast<size_t>(num_raw), kDead);
  std::vector<int32_t> order{0};
  id[0] = 0;
  for (size_t i = 0; i < order.size(); ++i)
    for (size_t c = 0; c < num_classes; ++c) {
      const int32_t t = raw_next(order[i], c);
      if (t == kDead || !live[static_cast<size_t>(t)] || id[static_cast<size_t>(t)] != kDead) continue;
      id[static_cast<size_t>(t)] = static_cast<int32_t>(order.size());
      order.push_back(t);
    }
  auto dfa = std::make_shared<CompiledRegex>();
  const size_t n = order.size();
  dfa->byte_class_ = raw.class_of;
  dfa->num_byte_classes_ = raw.num_classes;
  dfa->next_.assign(n * num_classes, kDead);
  dfa->accepting_.resize(n);
  dfa->continues_.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    dfa->accepting_[i] = raw.accepting[static_cast<size_t>(order[i])];
    for (size_t c = 0; c < num_classes; ++c) {
      const int32_t t = raw_next(order[i], c);
      if (t == kDead || !live[static_cast<size_t>(t)]) continue;
      dfa->next_[i * num_classes + c] = id[static_cast<size_t>(t)];
      dfa->continues_[i] = 1;
    }
  }
  DSPARK_CHECK_REQUEST(dfa->continues_[0], "regex: matches only the empty string");

  // Distance to acceptance, backwards from the accepting states; then each state's first
  // byte on a shortest way there.
  std::vector<int32_t> dist(n, -1);
  std::vector<std::vector<int32_t>> back(n);
  for (size_t s = 0; s < n; ++s)
    for (size_t c = 0; c < num_classes; ++c) {
      const int32_t t = dfa->next_[s * num_classes + c];
      if (t != kDead) back[static_cast<size_t>(t)].push_back(static_cast<int32_t>(s));
    }
  for (size_t s = 0; s < n; ++s)
    if (dfa->accepting_[s]) {
      dist[s] = 0;
      queue.push_back(static_cast<int32_t>(s));
    }
  while (!queue.empty()) {
    const int32_t t = queue.front();
    queue.pop_front();
    for (const int32_t s : back[static_cast<size_t>(t)])
      if (dist[static_cast<size_t>(s)] < 0) {
        dist[static_cast<size_t>(s)] = dist[static_cast<size_t>(t)] + 1;
        queue.push_back(s);
      }
  }
  dfa->toward_accept_.assign(n, -1);
  for (size_t s = 0; s < n; ++s) {
    if (dfa->accepting_[s]) continue;
    for (int b = 0; b < 256; ++b) {
      const int32_t t = dfa->next(static_cast<int32_t>(s), static_cast<uint8_t>(b));
      if (t != kDead && dist[static_cast<size_t>(t)] == dist[s] - 1) {
        dfa->toward_accept_[s] = static_cast<int16_t>(b);
        break;
      }
    }
  }
  dfa->source_ = std::string(pattern);
  return dfa;
}

std::shared_ptr<const std::vector<int32_t>> CompiledRegex::lookahead_classes(int32_t max_bytes) const {
  std::lock_guard lock(lookahead_mu_);
  for (const auto& [bytes, classes] : lookahead_)
    if (bytes == max_bytes) return classes;
  auto classes = std::make_shared<const std::vector<int32_t>>(compute_lookahead_classes(max_bytes));
  lookahead_.emplace_back(max_bytes, classes);
  return classes;
}

std::vector<int32_t> CompiledRegex::compute_lookahead_classes(int32_t max_bytes) const {
  const size_t n = accepting_.size();
  const auto num_classes = static_cast<size_t>(num_byte_classes_);
  const size_t width = num_classes + 1;
  std::vector<int32_t> cls(n, 0), next_cls(n);
  // Round r: states of one class read the same strings of up to r bytes. A state's key is
  // its class and its successors' classes; equal keys share the next round's class. Keys
  // live in one flat array, found through an open-addressing table of representatives (no
  // allocation per state: a counted run has thousands of states and tokens tens of bytes).
  std::vector<int32_t> keys(n * width);
  size_t table_size = 1;
  while (table_size < 2 * n) table_size *= 2;
  std::vector<int32_t> table(table_size);
  int32_t count = 1;
  for (int32_t round = 0; round < max_bytes; ++round) {
    std::fill(table.begin(), table.end(), -1);
    int32_t new_count = 0;
    for (size_t s = 0; s < n; ++s) {
      int32_t* key = keys.data() + s * width;
      key[0] = cls[s];
      uint64_t h = static_cast<uint64_t>(cls[s]) * 0x9E3779B97F4A7C15ull;
      for (size_t c = 0; c < num_classes; ++c) {
        const int32_t t = next_[s * num_classes + c];
        key[c + 1] = t == kDead ? -1 : cls[static_cast<size_t>(t)];
        h = (h ^ static_cast<uint64_t>(static_cast<uint32_t>(key[c + 1]))) * 0x100000001B3ull;
      }
      for (size_t slot = (h ^ (h >> 29)) & (table_size - 1);; slot = (slot + 1) & (table_size - 1)) {
        const int32_t rep = table[slot];
        if (rep < 0) {
          table[slot] = static_cast<int32_t>(s);
          next_cls[s] = new_count++;
          break;
        }
        if (std::equal(key, key + width, keys.data() + static_cast<size_t>(rep) * width)) {
          next_cls[s] = next_cls[static_cast<size_t>(rep)];
          break;
        }
      }
    }
    cls.swap(next_cls);
    if (new_count == count) break;  // nothing split: every later round is the same
    count = new_count;
  }
  return cls;
}

std::string CompiledRegex::completion(int32_t state) const {
  std::string out;
  while (!accepting(state)) {
    const int16_t b = toward_accept_[static_cast<size_t>(state)];
    out += static_cast<char>(b);
    state = next(state, static_cast<uint8_t>(b));
  }
  return out;
}

std::string choice_regex(std::span<const std::string> choices) {
  DSPARK_CHECK_REQUEST(!choices.empty(), "choice: the list of choices is empty");
  std::string pattern;
  for (const std::string& c : choices) {
    DSPARK_CHECK_REQUEST(!c.empty(), "choice: an empty string is not a choice");
    if (!pattern.empty()) pattern += '|';
    pattern += regex::escape_regex(c);
  }
  return pattern;
}

bool RegexMatcher::advance(std::string_view bytes) {
  int32_t s = state_;
  for (const char c : bytes) {
    s = regex_->next(s, static_cast<uint8_t>(c));
    if (s == CompiledRegex::kDead) return false;
  }
  state_ = s;
  return true;
}

}  // namespace dspark
