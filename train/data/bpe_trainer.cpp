#include "data/bpe_trainer.h"

#include <algorithm>
#include <queue>
#include <set>
#include <utility>

#include <spdlog/spdlog.h>

#include "core/check.h"
#include "core/clock.h"

namespace dspark::train {
namespace {

using PairKey = uint64_t;  // (left id << 32) | right id

PairKey pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}
int32_t pair_left(PairKey k) { return static_cast<int32_t>(k >> 32); }
int32_t pair_right(PairKey k) { return static_cast<int32_t>(k & 0xFFFFFFFFu); }

struct Word {
  std::vector<int32_t> symbols;  // [num_symbols] token ids
  int64_t count = 0;             // occurrences in the corpus
};

struct HeapEntry {
  int64_t count;
  PairKey pair;
};

// Orders heap entries so that the best merge is on top: higher count, then the smaller
// (left, right) pair of byte strings.
class HeapOrder {
 public:
  explicit HeapOrder(const std::vector<std::string>* tokens) : tokens_(tokens) {}
  // True when a has lower priority than b.
  bool operator()(const HeapEntry& a, const HeapEntry& b) const {
    if (a.count != b.count) return a.count < b.count;
    const int left = (*tokens_)[pair_left(a.pair)].compare((*tokens_)[pair_left(b.pair)]);
    if (left != 0) return left > 0;
    return (*tokens_)[pair_right(a.pair)].compare((*tokens_)[pair_right(b.pair)]) > 0;
  }

 private:
  const std::vector<std::string>* tokens_;
};

}  // namespace

BpeTrainer::BpeTrainer(BpeTrainerOptions options)
    : options_(std::move(options)), pretokenizer_(options_.pattern) {
  const int64_t num_special = static_cast<int64_t>(options_.special_tokens.size());
  DSPARK_CHECK(options_.vocab_size >= num_special + 256,
               "vocab_size {} is below the {} special tokens + 256 bytes", options_.vocab_size,
               num_special);
  DSPARK_CHECK(options_.vocab_size <= (int64_t{1} << 31) - 1, "vocab_size {} does not fit int32",
               options_.vocab_size);
  DSPARK_CHECK(options_.min_frequency >= 1, "min_frequency must be >= 1, got {}",
               options_.min_frequency);
  std::set<std::string> seen;
  for (const auto& s : options_.special_tokens) {
    DSPARK_CHECK(!s.empty(), "special tokens must not be empty");
    DSPARK_CHECK(seen.insert(s).second, "special token '{}' is listed twice", s);
  }
}

void BpeTrainer::add_document(std::string_view text) {
  DSPARK_CHECK(!trained_, "add_document after train()");
  const double t0 = now_seconds();
  ++stats_.num_documents;
  split_on_special_tokens(
      text, options_.special_tokens,
      [&](std::string_view segment) {
        stats_.num_bytes += static_cast<int64_t>(segment.size());
        pieces_.clear();
        pretokenizer_.split(segment, pieces_);
        stats_.num_pretokens += static_cast<int64_t>(pieces_.size());
        for (const std::string_view piece : pieces_) {
          auto it = word_counts_.find(std::string(piece));
          if (it == word_counts_.end()) {
            word_counts_.emplace(std::string(piece), 1);
          } else {
            ++it->second;
          }
        }
      },
      [](int) {});
  stats_.pretokenize_seconds += now_seconds() - t0;
}

BpeModel BpeTrainer::train() {
  DSPARK_CHECK(!trained_, "train() called twice");
  trained_ = true;
  const double t0 = now_seconds();

  BpeModel model;
  model.pattern = options_.pattern;
  model.special_tokens = options_.special_tokens;
  model.tokens = options_.special_tokens;
  for (int b = 0; b < 256; ++b) model.tokens.emplace_back(1, static_cast<char>(b));
  std::vector<std::string>& tokens = model.tokens;  // [vocab_size] grows with each merge

  // Words in a fixed order (sorted bytes), so that everything below is reproducible.
  std::vector<std::pair<std::string, int64_t>> sorted_words(word_counts_.begin(),
                                                            word_counts_.end());
  word_counts_.clear();
  std::sort(sorted_words.begin(), sorted_words.end());
  std::vector<Word> words(sorted_words.size());  // [num_words]
  for (size_t w = 0; w < sorted_words.size(); ++w) {
    words[w].count = sorted_words[w].second;
    words[w].symbols.reserve(sorted_words[w].first.size());
    for (const char c : sorted_words[w].first)
      words[w].symbols.push_back(model.byte_id(static_cast<uint8_t>(c)));
  }
  stats_.num_words = static_cast<int64_t>(words.size());
  sorted_words.clear();
  sorted_words.shrink_to_fit();

  std::unordered_map<PairKey, int64_t> pair_counts;
  // Words that contain (or once contained) a pair; may hold stale or repeated indices,
  // cleaned up when the pair is merged.
  std::unordered_map<PairKey, std::vector<int32_t>> pair_words;
  for (size_t w = 0; w < words.size(); ++w) {
    const auto& sym = words[w].symbols;
    for (size_t i = 0; i + 1 < sym.size(); ++i) {
      const PairKey k = pair_key(sym[i], sym[i + 1]);
      pair_counts[k] += words[w].count;
      pair_words[k].push_back(static_cast<int32_t>(w));
    }
  }
  std::priority_queue<HeapEntry, std::vector<HeapEntry>, HeapOrder> heap{HeapOrder(&tokens)};
  for (const auto& [k, c] : pair_counts) heap.push({c, k});

  std::set<std::string> token_strings(tokens.begin() + model.num_special(), tokens.end());
  std::vector<int32_t> merged;       // scratch: a word's symbols after one merge
  std::vector<PairKey> new_pairs;    // pairs created by the current merge
  while (static_cast<int64_t>(tokens.size()) < options_.vocab_size && !heap.empty()) {
    const HeapEntry top = heap.top();
    heap.pop();
    const int64_t current = pair_counts[top.pair];
    if (current != top.count) {
      if (current > 0) heap.push({current, top.pair});
      continue;
    }
    if (top.count < options_.min_frequency) break;

    const int32_t left = pair_left(top.pair);
    const int32_t right = pair_right(top.pair);
    std::string joined = tokens[left] + tokens[right];
    if (!token_strings.insert(joined).second) {
      // Another split of the same string was merged already. A second id for one string
      // cannot be written to tokenizer.json (the vocabulary maps strings to ids), so this
      // pair is never merged; its words keep the other segmentation.
      ++stats_.num_skipped_duplicates;
      continue;
    }
    const auto new_id = static_cast<int32_t>(tokens.size());
    tokens.push_back(std::move(joined));
    model.merges.emplace_back(left, right);

    std::vector<int32_t> where = std::move(pair_words[top.pair]);
    pair_words.erase(top.pair);
    std::sort(where.begin(), where.end());
    where.erase(std::unique(where.begin(), where.end()), where.end());
    new_pairs.clear();
    for (const int32_t w : where) {
      Word& word = words[w];
      auto& sym = word.symbols;
      merged.clear();
      bool found = false;
      for (size_t i = 0; i < sym.size();) {
        if (i + 1 < sym.size() && sym[i] == left && sym[i + 1] == right) {
          merged.push_back(new_id);
          found = true;
          i += 2;
        } else {
          merged.push_back(sym[i]);
          i += 1;
        }
      }
      if (!found) continue;  // stale entry: an earlier merge removed the pair here
      for (size_t i = 0; i + 1 < sym.size(); ++i)
        pair_counts[pair_key(sym[i], sym[i + 1])] -= word.count;
      for (size_t i = 0; i + 1 < merged.size(); ++i) {
        const PairKey k = pair_key(merged[i], merged[i + 1]);
        pair_counts[k] += word.count;
        if (merged[i] == new_id || merged[i + 1] == new_id) {
          pair_words[k].push_back(w);
          new_pairs.push_back(k);
        }
      }
      sym.swap(merged);
    }
    pair_counts.erase(top.pair);
    std::sort(new_pairs.begin(), new_pairs.end());
    new_pairs.erase(std::unique(new_pairs.begin(), new_pairs.end()), new_pairs.end());
    for (const PairKey k : new_pairs) heap.push({pair_counts[k], k});
  }
  stats_.num_merges = static_cast<int64_t>(model.merges.size());
  stats_.merge_seconds = now_seconds() - t0;
  if (model.vocab_size() < options_.vocab_size) {
    spdlog::warn("BPE stopped at {} tokens (asked {}): no pair occurs {} times or more",
                 model.vocab_size(), options_.vocab_size, options_.min_frequency);
  }
  return model;
}

}  // namespace dspark::train
