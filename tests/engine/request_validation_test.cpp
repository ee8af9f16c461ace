// validate_prompt / validate_request: each rule, the kind it throws and its sentence.
#include <gtest/gtest.h>

#include "engine/request_validation.h"

namespace dspark {
namespace {

constexpr int64_t kVocab = 512;
constexpr int64_t kContext = 8;

// The kind and message() of what validate_request throws (kInternal + "" when nothing).
std::pair<ErrorKind, std::string> outcome(const std::vector<int32_t>& prompt, const GenerationOptions& options = {}) {
  try {
    validate_request(prompt, options, kVocab, kContext);
  } catch (const Error& e) {
    return {e.kind(), e.message()};
  }
  return {ErrorKind::kInternal, ""};
}

TEST(RequestValidation, AValidRequestPasses) {
  EXPECT_NO_THROW(validate_request(std::vector<int32_t>{1, 2, 511}, GenerationOptions{}, kVocab, kContext));
  EXPECT_NO_THROW(validate_prompt(std::vector<int32_t>(kContext - 1, 0), kVocab, kContext));  // one left to generate
}

TEST(RequestValidation, EmptyPrompt) {
  const auto [kind, message] = outcome({});
  EXPECT_EQ(kind, ErrorKind::kInvalidRequest);
  EXPECT_EQ(message, "the prompt is empty (no tokens to condition on)");
}

TEST(RequestValidation, PromptWithoutRoomToGenerate) {
  const std::vector<int32_t> full(kContext, 1);
  EXPECT_THROW(validate_prompt(full, kVocab, kContext), ContextLengthError);
  const auto [kind, message] = outcome(full);
  EXPECT_EQ(kind, ErrorKind::kInvalidRequest);
  EXPECT_EQ(message,
            "This model's maximum context length is 8 tokens, but the prompt has 8 tokens (at least one must be left "
            "to generate)");
}

TEST(RequestValidation, TokenIdsOutsideTheVocabulary) {
  for (const int32_t id : {static_cast<int32_t>(kVocab), -1, 99999}) {
    const auto [kind, message] = outcome({1, id});
    EXPECT_EQ(kind, ErrorKind::kInvalidRequest) << id;
    EXPECT_EQ(message, fmt::format("token id {} is outside the vocabulary [0, 512)", id));
  }
}

TEST(RequestValidation, LogitBiasIdsOutsideTheVocabulary) {
  GenerationOptions biased;
  biased.sampling.logit_bias = {{0, 1.0f}, {kVocab - 1, -100.0f}};
  EXPECT_EQ(outcome({1}, biased).second, "");
  biased.sampling.logit_bias = {{3, 1.0f}, {kVocab, 2.0f}};
  EXPECT_EQ(outcome({1}, biased),
            std::make_pair(ErrorKind::kInvalidRequest,
                           std::string("logit_bias token id 512 is outside the vocabulary [0, 512)")));
}

TEST(RequestValidation, InvalidOptionsAreInvalidRequests) {
  GenerationOptions negative;
  negative.max_tokens = -1;
  EXPECT_EQ(outcome({1}, negative), std::make_pair(ErrorKind::kInvalidRequest, std::string("max_tokens must be >= 0, got -1")));
  GenerationOptions hot;
  hot.sampling.temperature = -0.5f;
  EXPECT_EQ(outcome({1}, hot).first, ErrorKind::kInvalidRequest);
  GenerationOptions logprobs;
  logprobs.logprobs = 21;
  EXPECT_EQ(outcome({1}, logprobs).first, ErrorKind::kInvalidRequest);
  GenerationOptions stops;
  stops.stop.assign(kMaxStopStrings + 1, "x");
  EXPECT_EQ(outcome({1}, stops).first, ErrorKind::kInvalidRequest);
  // The options are checked first: an invalid request is reported for them even with an
  // empty prompt.
  EXPECT_EQ(outcome({}, negative).second, "max_tokens must be >= 0, got -1");
}

}  // namespace
}  // namespace dspark
