#include "train/draft/draft_vocab_choice.h"

#include <algorithm>
#include <numeric>

#include "core/check.h"

namespace dspark::train {

namespace {

DraftVocab from_target_ids(std::vector<int64_t> ids, int64_t vocab_size) {
  DraftVocab v;
  v.t2d.assign(static_cast<size_t>(vocab_size), 0);
  for (size_t d = 0; d < ids.size(); ++d) {
    v.d2t.push_back(ids[d] - static_cast<int64_t>(d));
    v.t2d[static_cast<size_t>(ids[d])] = 1;
  }
  v.target_ids = std::move(ids);
  return v;
}

}  // namespace

DraftVocab build_draft_vocab(std::span<const int64_t> counts, int64_t draft_vocab_size) {
  const auto vocab_size = static_cast<int64_t>(counts.size());
  DSPARK_CHECK(draft_vocab_size >= 1 && draft_vocab_size <= vocab_size,
               "draft vocabulary: size {} must be within 1..{} (the target vocabulary)", draft_vocab_size, vocab_size);
  std::vector<int64_t> order(counts.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  // Most frequent first; equal counts by id, so the choice is a pure function of the counts.
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return counts[static_cast<size_t>(a)] > counts[static_cast<size_t>(b)];
  });
  order.resize(static_cast<size_t>(draft_vocab_size));
  std::sort(order.begin(), order.end());
  return from_target_ids(std::move(order), vocab_size);
}

DraftVocab draft_vocab_from_d2t(std::span<const int64_t> d2t, int64_t vocab_size) {
  std::vector<int64_t> ids;
  std::vector<uint8_t> seen(static_cast<size_t>(std::max<int64_t>(vocab_size, 0)), 0);
  for (size_t d = 0; d < d2t.size(); ++d) {
    const int64_t id = static_cast<int64_t>(d) + d2t[d];
    DSPARK_CHECK(id >= 0 && id < vocab_size, "d2t[{}] = {} maps to target id {}, outside 0..{}", d, d2t[d], id,
                 vocab_size - 1);
    DSPARK_CHECK(!seen[static_cast<size_t>(id)], "d2t[{}] maps to target id {}, which an earlier draft id has", d,
                 id);
    seen[static_cast<size_t>(id)] = 1;
    ids.push_back(id);
  }
  return from_target_ids(std::move(ids), vocab_size);
}

double vocab_coverage(std::span<const int64_t> counts, const DraftVocab& vocab) {
  double covered = 0, total = 0;
  for (size_t t = 0; t < counts.size(); ++t) {
    total += static_cast<double>(counts[t]);
    if (vocab.t2d[t]) covered += static_cast<double>(counts[t]);
  }
  return total > 0 ? covered / total : 0.0;
}

std::vector<int64_t> count_completion_tokens(const std::vector<DraftSequence>& sequences, int64_t vocab_size) {
  std::vector<int64_t> counts(static_cast<size_t>(vocab_size), 0);
  for (const DraftSequence& s : sequences) {
    for (size_t i = static_cast<size_t>(s.prompt_len); i < s.tokens.size(); ++i) {
      const int32_t t = s.tokens[i];
      DSPARK_CHECK(t >= 0 && t < vocab_size, "token {} is outside the target vocabulary (0..{})", t, vocab_size - 1);
      ++counts[static_cast<size_t>(t)];
    }
  }
  return counts;
}

}  // namespace dspark::train
