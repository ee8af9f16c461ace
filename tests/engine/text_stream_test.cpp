#include "engine/text_stream.h"

#include <gtest/gtest.h>

namespace dspark {
namespace {

TEST(TextStream, NoStopStringsPassesEverythingThrough) {
  TextStream s({});
  EXPECT_EQ(s.append("Hello"), "Hello");
  EXPECT_EQ(s.append(", world"), ", world");
  EXPECT_EQ(s.finish(), "");
  EXPECT_FALSE(s.stopped());
}

TEST(TextStream, HoldsBackPossibleStopPrefixAndCutsAtStop) {
  TextStream s({"\nQuestion:"});
  EXPECT_EQ(s.append("The answer is 4"), "The answer is 4");
  EXPECT_EQ(s.append("\nQue"), "");  // might become the stop string
  EXPECT_EQ(s.append("stion: next"), "");
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.text(), "The answer is 4");
}

TEST(TextStream, ReleasesHeldTextWhenItDoesNotMatch) {
  TextStream s({"STOP"});
  EXPECT_EQ(s.append("ab ST"), "ab ");
  EXPECT_EQ(s.append("ART"), "START");
  EXPECT_EQ(s.append("x ST"), "x ");
  EXPECT_EQ(s.finish(), "ST");
  EXPECT_FALSE(s.stopped());
}

TEST(TextStream, StopSpanningManyPiecesAndEarliestOfSeveral) {
  TextStream s({"cde", "bc"});
  std::string out;
  for (const char* p : {"a", "b", "c", "d", "e"}) out += s.append(p);
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(out, "a");
  EXPECT_EQ(s.text(), "a");
}

TEST(TextStream, StopAtVeryStart) {
  TextStream s({"x"});
  EXPECT_EQ(s.append("xyz"), "");
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.append("more"), "");
}

}  // namespace
}  // namespace dspark
