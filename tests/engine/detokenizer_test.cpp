// Detokenizer: text beside the engine. With a one-character-per-token tokenizer: text is
// released as it becomes final, a stop string cuts text and tokens where it completes
// (also across outputs and inside one speculative round's tokens), the engine is asked
// to cancel exactly once, later outputs are emptied, the final one becomes "stop"; held
// back text is released by an ordinary finish.
#include "engine/detokenizer.h"

#include <gtest/gtest.h>

#include "support/tiny_models.h"

namespace dspark {
namespace {

constexpr int64_t kVocab = 96;

const Tokenizer& tokenizer() {
  static const Tokenizer tok =
      Tokenizer::from_dir(testing::write_tiny_tokenizer(testing::make_temp_dir("detokenizer"), kVocab));
  return tok;
}

std::vector<int32_t> ids(const std::string& text) {
  std::vector<int32_t> out;
  for (char c : text) out.push_back(static_cast<int32_t>(c - '!'));
  return out;
}

RequestOutput output(const std::string& text, bool finished = false, FinishReason reason = FinishReason::kLength) {
  RequestOutput out;
  out.token_ids = ids(text);
  out.finished = finished;
  out.finish_reason = reason;
  return out;
}

TEST(Detokenizer, AStopStringCutsTextAndTokensAndAsksForOneCancel) {
  Detokenizer d(tokenizer(), {"XYZ"});
  RequestOutput a = output("abX");
  EXPECT_FALSE(d.process(a));
  EXPECT_EQ(a.text, "ab");  // X may begin the stop string: held back
  EXPECT_EQ(a.output_tokens, 3);

  RequestOutput b = output("YZcd");  // one speculative round went past the stop
  b.logprobs.resize(4);
  EXPECT_TRUE(d.process(b));
  EXPECT_EQ(b.text, "");
  EXPECT_EQ(b.token_ids, ids("YZ"));
  EXPECT_EQ(b.logprobs.size(), 2u);
  EXPECT_FALSE(b.finished);  // the engine is still running it: cancel, then its end comes
  EXPECT_EQ(b.output_tokens, 5);
  EXPECT_TRUE(d.stopped());

  RequestOutput c = output("ef");
  EXPECT_FALSE(d.process(c));
  EXPECT_TRUE(c.token_ids.empty());
  EXPECT_TRUE(c.text.empty());

  RequestOutput end = output("", true, FinishReason::kCancelled);
  EXPECT_FALSE(d.process(end));
  EXPECT_EQ(end.finish_reason, FinishReason::kStop);
  EXPECT_EQ(end.output_tokens, 5);
}

TEST(Detokenizer, AStopInTheEnginesLastOutputNeedsNoCancel) {
  Detokenizer d(tokenizer(), {"cd", "zz"});
  RequestOutput out = output("abcde", true, FinishReason::kLength);
  EXPECT_FALSE(d.process(out));
  EXPECT_EQ(out.text, "ab");
  EXPECT_EQ(out.token_ids, ids("abcd"));
  EXPECT_EQ(out.finish_reason, FinishReason::kStop);
}

TEST(Detokenizer, AnOrdinaryFinishReleasesHeldBackText) {
  Detokenizer d(tokenizer(), {"XYZ"});
  RequestOutput a = output("aXY");
  d.process(a);
  EXPECT_EQ(a.text, "a");
  RequestOutput end = output("", true, FinishReason::kLength);
  d.process(end);
  EXPECT_EQ(end.text, "XY");
  EXPECT_EQ(end.finish_reason, FinishReason::kLength);
  EXPECT_EQ(end.output_tokens, 3);
}

TEST(Detokenizer, WithoutStopStringsTextFollowsTokens) {
  Detokenizer d(tokenizer(), {});
  RequestOutput a = output("hello");
  EXPECT_FALSE(d.process(a));
  EXPECT_EQ(a.text, "hello");
  EXPECT_FALSE(d.stopped());
}

}  // namespace
}  // namespace dspark
