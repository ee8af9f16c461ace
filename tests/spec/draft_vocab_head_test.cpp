// DraftVocabHead::greedy_token: the token a greedy transform of the row over the target
// vocabulary picks, read from the draft-id row without building that row.
#include "spec/draft_vocab_head.h"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/sampling.h"

namespace dspark {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

DraftVocabHead make_head(std::vector<int32_t> to_target, int64_t size, int64_t target_vocab) {
  const std::vector<float> lm_head(static_cast<size_t>(size * 4), 0.0f);  // never projected here
  return DraftVocabHead(Linear(lm_head, size, 4, {}, LinearOptions{DType::kF32, 4}), nullptr, std::move(to_target),
                        target_vocab, /*max_rows=*/4, /*max_markov_rows=*/1, /*keep_base_logits=*/false);
}

// Rows of 6 draft ids mapped out of order onto 10 target ids: a clear maximum, a tie (the
// lower target id wins, as argmax over the target row gives, though it is the later draft
// id), NaNs beside the maximum, and nothing but −∞ and NaN (no answer without the transform).
TEST(DraftVocabHead, GreedyTokenIsTheArgmaxOfTheTargetRow) {
  for (const std::vector<int32_t>& to_target : {std::vector<int32_t>{7, 2, 9, 4, 0, 5},
                                                std::vector<int32_t>{0, 2, 4, 5, 7, 9}}) {
    DraftVocabHead head = make_head(to_target, 6, 10);
    const float nan = std::nanf("");
    const std::vector<std::vector<float>> rows = {{0.5f, -1.0f, 3.0f, 2.0f, 0.0f, 1.0f},
                                                  {2.0f, -1.0f, 1.0f, 2.0f, 0.0f, 2.0f},
                                                  {nan, 1.5f, nan, -kInf, 1.0f, nan},
                                                  {-kInf, nan, -kInf, -kInf, nan, -kInf}};
    for (int64_t r = 0; r < 4; ++r) std::copy(rows[r].begin(), rows[r].end(), head.row(r));
    for (int64_t r = 0; r < 3; ++r)
      EXPECT_EQ(head.greedy_token(r), argmax(head.target_row(r), 10)) << "row " << r << " map " << to_target[0];
    EXPECT_EQ(head.greedy_token(1), to_target[0] == 7 ? 4 : 0);  // the tie
    EXPECT_EQ(head.greedy_token(3), -1);
  }
}

// Without a reduced vocabulary the row is the target row: the greedy token is its argmax.
TEST(DraftVocabHead, GreedyTokenOverTheWholeVocabulary) {
  DraftVocabHead head = make_head({}, 5, 5);
  const std::vector<float> row = {1.0f, 4.0f, -2.0f, 4.0f, 0.0f};
  std::copy(row.begin(), row.end(), head.row(0));
  EXPECT_EQ(head.greedy_token(0), 1);
  EXPECT_EQ(head.greedy_token(0), argmax(head.target_row(0), 5));
}

}  // namespace
}  // namespace dspark
