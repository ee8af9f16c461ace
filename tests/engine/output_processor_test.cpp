// OutputProcessor with scripted target logits: for a json_object request the mask lets only
// tokens that continue a JSON object through, however the logits rank the others, and the
// request finishes ("stop") the moment its object closes.
#include "engine/output_processor.h"

#include <limits>

#include <gtest/gtest.h>

#include "engine/detokenizer.h"
#include "structured/json_matcher.h"
#include "structured/token_bytes.h"
#include "structured/token_mask.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

constexpr int64_t kVocab = 97;  // write_tiny_tokenizer: id = char - '!' for '!'..'~'

int32_t id_of(char c) { return static_cast<int32_t>(c - '!'); }

TEST(OutputProcessor, AJsonObjectRequestTakesOnlyValidTokensAndStopsWhenTheObjectCloses) {
  const auto dir = testing::write_tiny_tokenizer(testing::make_temp_dir("output-processor"), kVocab);
  const Tokenizer tok = Tokenizer::from_dir(dir);
  const JsonTokenMasker masker(token_bytes(tok, kVocab, tok.eos_ids()));
  OutputProcessor processor(kVocab, /*max_model_len=*/256, /*max_drafts=*/0, tok);

  GenerationOptions g;
  g.max_tokens = 100;
  g.sampling.temperature = 0;
  g.response_format = ResponseFormat::kJsonObject;
  Request r(1, {id_of('Q'), id_of(':')}, g);
  Detokenizer detokenizer(tok, {});
  r.json = std::make_unique<JsonConstraint>(masker);
  r.num_computed = 1;  // the prompt's last token is the anchor

  // Every step the logits put first a character that cannot come next (where one exists:
  // inside a string anything printable can), the intended one second, the rest far below.
  const std::string intended = "{\"a\":[1,true],\"b\":{}}";
  std::vector<RequestOutput> outputs;
  std::string text;
  JsonMatcher state{JsonMatcherOptions{}};
  int decoys = 0;
  for (size_t i = 0; i < intended.size(); ++i) {
    std::vector<float> logits(kVocab, -10.0f);
    for (char decoy : std::string("x}]:,0\"{")) {
      JsonMatcher probe = state;
      if (probe.advance(static_cast<uint8_t>(decoy))) continue;
      logits[id_of(decoy)] = 5.0f;
      ++decoys;
      break;
    }
    logits[id_of(intended[i])] = 4.0f;
    ASSERT_TRUE(state.advance(static_cast<uint8_t>(intended[i])));
    outputs.clear();
    processor.commit(r, logits.data(), outputs);
    ASSERT_EQ(outputs.size(), 1u) << "step " << i;
    detokenizer.process(outputs[0]);
    text += outputs[0].text;
    if (i + 1 < intended.size()) {
      ASSERT_FALSE(outputs[0].finished) << "finished early at step " << i << ": " << text;
    } else {
      EXPECT_TRUE(outputs[0].finished);
      EXPECT_EQ(outputs[0].finish_reason, FinishReason::kStop);
    }
  }
  EXPECT_EQ(text, intended);
  EXPECT_EQ(r.state, RequestState::kFinished);
  EXPECT_GT(decoys, 15) << "the mask was hardly exercised";
}

TEST(OutputProcessor, WithoutAConstraintTheLogitsDecide) {
  const auto dir = testing::write_tiny_tokenizer(testing::make_temp_dir("output-processor-free"), kVocab);
  const Tokenizer tok = Tokenizer::from_dir(dir);
  OutputProcessor processor(kVocab, 256, 0, tok);
  GenerationOptions g;
  g.max_tokens = 1;
  g.sampling.temperature = 0;
  Request r(1, {id_of('Q')}, g);
  std::vector<float> logits(kVocab, -10.0f);
  logits[id_of('x')] = 5.0f;
  std::vector<RequestOutput> outputs;
  processor.commit(r, logits.data(), outputs);
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].token_ids, std::vector<int32_t>{id_of('x')});
  EXPECT_TRUE(outputs[0].text.empty());  // text is made beside the engine
  Detokenizer detokenizer(tok, {});
  detokenizer.process(outputs[0]);
  EXPECT_EQ(outputs[0].text, "x");
  EXPECT_EQ(outputs[0].finish_reason, FinishReason::kLength);
}

}  // namespace
}  // namespace dspark
