// dspark::Error: kinds from the check macros, the sentence kept apart from its location,
// and what() unchanged ("file:line: sentence") for logs and the CLI.
#include <gtest/gtest.h>

#include "core/check.h"

namespace dspark {
namespace {

template <typename Throw>
Error caught(Throw&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "nothing thrown";
  return Error("nothing thrown");
}

TEST(ErrorKind, EachMacroThrowsItsKind) {
  EXPECT_EQ(caught([] { DSPARK_CHECK(1 + 1 == 3, "math is {}", "broken"); }).kind(), ErrorKind::kInternal);
  EXPECT_EQ(caught([] { DSPARK_FAIL("always"); }).kind(), ErrorKind::kInternal);
  EXPECT_EQ(caught([] { DSPARK_CHECK_REQUEST(false, "bad"); }).kind(), ErrorKind::kInvalidRequest);
  EXPECT_EQ(caught([] { DSPARK_CHECK_CAPACITY(false, "full"); }).kind(), ErrorKind::kCapacity);
  EXPECT_EQ(caught([] { DSPARK_CHECK_KIND(ErrorKind::kNotFound, false, "gone"); }).kind(), ErrorKind::kNotFound);
  EXPECT_NO_THROW(DSPARK_CHECK_REQUEST(true, "never formatted {}", 1));
}

TEST(ErrorKind, MessageAndLocationAreSeparateAndWhatJoinsThem) {
  const int line = __LINE__ + 1;
  const Error e = caught([] { DSPARK_CHECK_REQUEST(false, "the prompt has {} tokens", 7); });
  EXPECT_EQ(e.message(), "the prompt has 7 tokens");
  // Only src/ and train/ paths are shortened; this file's location ends the same way.
  EXPECT_TRUE(e.location().ends_with(fmt::format("core/check_test.cpp:{}", line))) << e.location();
  EXPECT_EQ(std::string(e.what()), e.location() + ": the prompt has 7 tokens");
}

TEST(ErrorKind, SourceLocationIsRelativeToSrc) {
  EXPECT_EQ(source_location("/home/x/dspark/src/engine/engine.cpp", 12), "engine/engine.cpp:12");
  EXPECT_EQ(source_location("/home/x/dspark/train/draft/loss.cpp", 3), "train/draft/loss.cpp:3");
}

TEST(ErrorKind, AnErrorWithoutLocationIsItsMessage) {
  const Error e("stories.jinja:3: unexpected '}'");
  EXPECT_EQ(e.kind(), ErrorKind::kInternal);
  EXPECT_EQ(e.location(), "");
  EXPECT_EQ(e.message(), "stories.jinja:3: unexpected '}'");
  EXPECT_STREQ(e.what(), "stories.jinja:3: unexpected '}'");
  EXPECT_EQ(Error("full", ErrorKind::kCapacity).kind(), ErrorKind::kCapacity);
}

TEST(ErrorKind, Names) {
  EXPECT_EQ(error_kind_name(ErrorKind::kInvalidRequest), "invalid_request");
  EXPECT_EQ(error_kind_name(ErrorKind::kCapacity), "capacity");
  EXPECT_EQ(error_kind_name(ErrorKind::kNotFound), "not_found");
  EXPECT_EQ(error_kind_name(ErrorKind::kInternal), "internal");
}

}  // namespace
}  // namespace dspark
