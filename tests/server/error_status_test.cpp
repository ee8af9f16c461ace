// Engine errors as clients see them: the HTTP status from the error's kind, never from its
// text, and the sentence without the source location.
#include <gtest/gtest.h>

#include "engine/engine_loop.h"
#include "engine/request_validation.h"
#include "server/openai_protocol.h"

namespace dspark {
namespace {

TEST(ServerErrorStatus, KindMapsToStatus) {
  EXPECT_EQ(http_status(ErrorKind::kInvalidRequest), 400);
  EXPECT_EQ(http_status(ErrorKind::kCapacity), 429);
  EXPECT_EQ(http_status(ErrorKind::kNotFound), 404);
  EXPECT_EQ(http_status(ErrorKind::kInternal), 500);
}

TEST(ServerErrorStatus, InvalidRequestIs400WithTheSentenceOnly) {
  const ApiError e = ApiError::from_error(Error(ErrorKind::kInvalidRequest, "engine/x.cpp:12", "max_tokens must be >= 0"),
                                          "max_tokens");
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.message(), "max_tokens must be >= 0");
  EXPECT_EQ(e.type(), "invalid_request_error");
  EXPECT_EQ(e.param(), "max_tokens");
  EXPECT_EQ(e.code(), "invalid_value");
}

TEST(ServerErrorStatus, ContextLengthHasItsOpenAICode) {
  try {
    validate_prompt(std::vector<int32_t>(4, 1), 10, 4);
    FAIL() << "nothing thrown";
  } catch (const Error& error) {
    const ApiError e = ApiError::from_error(error, "prompt");
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.code(), "context_length_exceeded");
    EXPECT_EQ(e.param(), "prompt");
    EXPECT_EQ(e.message().find(".cpp"), std::string::npos) << e.message();
  }
}

TEST(ServerErrorStatus, CapacityIs429QueueFull) {
  const ApiError e = ApiError::from_error(QueueFullError("the server is at capacity"));
  EXPECT_EQ(e.status(), 429);
  EXPECT_EQ(e.type(), "rate_limit_error");
  EXPECT_EQ(e.code(), "queue_full");
  EXPECT_EQ(e.message(), "the server is at capacity");
  // By kind, whatever the type: a plain Error of kind kCapacity is a 429 as well.
  EXPECT_EQ(ApiError::from_error(Error(ErrorKind::kCapacity, "a.cpp:1", "no room")).status(), 429);
}

TEST(ServerErrorStatus, NotFoundIs404) {
  const ApiError e = ApiError::from_error(Error(ErrorKind::kNotFound, "a.cpp:1", "no such adapter"));
  EXPECT_EQ(e.status(), 404);
  EXPECT_EQ(e.type(), "invalid_request_error");
}

TEST(ServerErrorStatus, InternalIs500AndShuttingDownIs503) {
  const ApiError internal = ApiError::from_error(Error(ErrorKind::kInternal, "engine/engine.cpp:627", "KV cache too small"));
  EXPECT_EQ(internal.status(), 500);
  EXPECT_EQ(internal.type(), "server_error");
  EXPECT_EQ(internal.message(), "KV cache too small");
  const ApiError stopping = ApiError::from_error(ShuttingDownError("the server is shutting down"));
  EXPECT_EQ(stopping.status(), 503);
  EXPECT_EQ(stopping.code(), "shutting_down");
}

}  // namespace
}  // namespace dspark
