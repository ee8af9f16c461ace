#include "train/draft/draft_batch.h"

#include <algorithm>
#include <numeric>

#include "core/check.h"

namespace dspark::train {

namespace {

uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

std::vector<int64_t> anchor_candidates(const DraftSequence& s) {
  std::vector<int64_t> out;
  const int64_t n = static_cast<int64_t>(s.tokens.size());
  for (int64_t a = s.prompt_len; a + 1 < n; ++a) out.push_back(a);
  return out;
}

std::vector<int64_t> sample_anchors(std::span<const int64_t> candidates, int64_t num_anchors, Rng& rng) {
  std::vector<int64_t> pool(candidates.begin(), candidates.end());
  const int64_t n = static_cast<int64_t>(pool.size());
  const int64_t k = std::min(n, num_anchors);
  for (int64_t i = 0; i < k; ++i) {
    const int64_t j = i + static_cast<int64_t>(rng.uniform() * static_cast<double>(n - i));
    std::swap(pool[i], pool[j]);
  }
  pool.resize(static_cast<size_t>(k));
  std::sort(pool.begin(), pool.end());
  return pool;
}

std::vector<int64_t> full_block_anchors(const DraftSequence& s, int64_t num_drafts, int64_t max_anchors) {
  std::vector<int64_t> all;
  const int64_t n = static_cast<int64_t>(s.tokens.size());
  for (int64_t a = s.prompt_len; a + num_drafts < n; ++a) all.push_back(a);
  if (static_cast<int64_t>(all.size()) <= max_anchors) return all;
  std::vector<int64_t> out;
  const double stride = static_cast<double>(all.size()) / static_cast<double>(max_anchors);
  for (int64_t i = 0; i < max_anchors; ++i) out.push_back(all[static_cast<size_t>(static_cast<double>(i) * stride)]);
  return out;
}

DraftBatch make_draft_batch(std::span<const DraftSequence* const> rows,
                            const std::vector<std::vector<int64_t>>& anchors, int64_t num_anchors, int32_t pad_id) {
  DSPARK_CHECK(rows.size() == anchors.size(), "make_draft_batch: {} rows but {} anchor lists", rows.size(),
               anchors.size());
  DraftBatch b;
  b.batch = static_cast<int64_t>(rows.size());
  b.num_anchors = num_anchors;
  for (const DraftSequence* s : rows) b.length = std::max<int64_t>(b.length, static_cast<int64_t>(s->tokens.size()));
  b.tokens.assign(static_cast<size_t>(b.batch * b.length), pad_id);
  b.loss_mask.assign(static_cast<size_t>(b.batch * b.length), 0);
  b.anchors.assign(static_cast<size_t>(b.batch * num_anchors), 0);
  b.keep.assign(static_cast<size_t>(b.batch * num_anchors), 0);
  for (int64_t r = 0; r < b.batch; ++r) {
    const DraftSequence& s = *rows[r];
    const int64_t n = static_cast<int64_t>(s.tokens.size());
    std::copy(s.tokens.begin(), s.tokens.end(), b.tokens.begin() + r * b.length);
    for (int64_t t = s.prompt_len; t < n; ++t) b.loss_mask[r * b.length + t] = 1;
    b.num_tokens += n;
    DSPARK_CHECK(static_cast<int64_t>(anchors[r].size()) <= num_anchors, "make_draft_batch: {} anchors > N = {}",
                 anchors[r].size(), num_anchors);
    for (size_t i = 0; i < anchors[r].size(); ++i) {
      DSPARK_CHECK(anchors[r][i] >= 0 && anchors[r][i] < n, "make_draft_batch: anchor {} outside the sequence ({})",
                   anchors[r][i], n);
      b.anchors[r * num_anchors + static_cast<int64_t>(i)] = anchors[r][i];
      b.keep[r * num_anchors + static_cast<int64_t>(i)] = 1;
    }
  }
  return b;
}

DraftBatchSampler::DraftBatchSampler(const std::vector<DraftSequence>& sequences, int64_t batch, int64_t num_anchors,
                                     uint64_t seed, int32_t pad_id)
    : sequences_(sequences), batch_(batch), num_anchors_(num_anchors), seed_(seed), pad_id_(pad_id) {
  DSPARK_CHECK(!sequences_.empty(), "draft training: no training sequences");
  DSPARK_CHECK(batch_ >= 1 && num_anchors_ >= 1, "draft training: batch {} and anchors {} must be >= 1", batch_,
               num_anchors_);
}

int64_t DraftBatchSampler::sequence_of(int64_t step, int64_t i) const {
  const int64_t n = static_cast<int64_t>(sequences_.size());
  const int64_t g = (step - 1) * batch_ + i;
  const int64_t epoch = g / n, pos = g % n;
  // The epoch's permutation, regenerated on demand (n is small next to a training step).
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  Rng rng(mix(seed_, static_cast<uint64_t>(epoch)));
  for (int64_t k = n - 1; k > 0; --k) {
    const int64_t j = static_cast<int64_t>(rng.uniform() * static_cast<double>(k + 1));
    std::swap(perm[k], perm[j]);
  }
  return perm[pos];
}

DraftBatch DraftBatchSampler::batch(int64_t step) const {
  DSPARK_CHECK(step >= 1, "draft batch: steps are 1-based, got {}", step);
  std::vector<const DraftSequence*> rows;
  std::vector<std::vector<int64_t>> anchors;
  for (int64_t i = 0; i < batch_; ++i) {
    const DraftSequence& s = sequences_[sequence_of(step, i)];
    rows.push_back(&s);
    Rng rng(mix(mix(seed_, static_cast<uint64_t>(step)), static_cast<uint64_t>(i) + 0x1234));
    anchors.push_back(sample_anchors(anchor_candidates(s), num_anchors_, rng));
  }
  return make_draft_batch(rows, anchors, num_anchors_, pad_id_);
}

}  // namespace dspark::train
