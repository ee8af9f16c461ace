// Exactness on a real third-party model: karpathy's stories260K (converted to Hugging Face
// layout), decoded greedily from BOS, must print exactly llama2.c's reference output.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "tokenizer/tokenizer.h"
#include "model/transformer.h"

namespace dspark {
namespace {

const std::filesystem::path kModels = std::filesystem::path(DSPARK_SHARED_DIR) / "data" / "models";

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string generate_greedy(DType compute, int64_t chunk, int64_t num_tokens) {
  const auto dir = kModels / "stories260K-hf";
  TransformerOptions opts;
  opts.compute = compute;
  opts.max_batch_tokens = 64;
  auto model = Transformer::load(dir, opts);
  const Tokenizer tokenizer = Tokenizer::from_dir(dir);
  EngineOptions engine_options;
  engine_options.max_running = 1;
  engine_options.max_batch_tokens = 64;
  engine_options.prefill_chunk = chunk;
  engine_options.block_size = 8;
  Engine engine(*model, tokenizer, engine_options);
  GenerationOptions gen;
  gen.max_tokens = num_tokens;
  gen.sampling.temperature = 0;
  const std::vector<int32_t> prompt = tokenizer.encode("", /*add_special_tokens=*/true);
  EXPECT_EQ(prompt, std::vector<int32_t>{1});
  return generate_one(engine, prompt, gen).text;
}

TEST(StoriesGolden, GreedyF32MatchesLlama2cReference) {
  const std::string golden = read_text(kModels / "stories260K.golden.txt");
  ASSERT_FALSE(golden.empty());
  EXPECT_EQ(generate_greedy(DType::kF32, 64, 200), golden);
}

TEST(StoriesGolden, StreamedTextEqualsFinalText) {
  const auto dir = kModels / "stories260K-hf";
  TransformerOptions opts;
  opts.compute = DType::kF32;
  auto model = Transformer::load(dir, opts);
  const Tokenizer tokenizer = Tokenizer::from_dir(dir);
  Engine engine(*model, tokenizer, EngineOptions{.max_running = 1, .max_batch_tokens = 64, .prefill_chunk = 3});
  GenerationOptions gen;
  gen.max_tokens = 60;
  gen.sampling.temperature = 0.8f;
  gen.sampling.seed = 5;
  gen.stop = {"park"};
  std::string streamed;
  const auto result = generate_one(engine, tokenizer.encode("Once upon a time", true), gen,
                                   [&](std::string_view piece) { streamed += piece; });
  EXPECT_EQ(streamed, result.text);
  if (result.finish_reason == FinishReason::kStop) {
    EXPECT_EQ(result.text.find("park"), std::string::npos);
  }
}

}  // namespace
}  // namespace dspark
