// Encodes ~1 MB of real text (tinyshakespeare) with both reference tokenizers, reports
// the throughput and checks the round trip. The time limit is loose on purpose (shared,
// noisy 2-core machines); the measured numbers are printed for the record.
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"

namespace dspark {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void measure(const std::string& name) {
  const Tokenizer tok =
      Tokenizer::from_file(DSPARK_SHARED_DIR "/data/tokenizers/" + name + "/tokenizer.json");
  const std::string text = read_file(DSPARK_SHARED_DIR "/data/corpus/tinyshakespeare.txt");
  ASSERT_GT(text.size(), 1000000u);
  const auto t0 = std::chrono::steady_clock::now();
  const auto ids = tok.encode(text);
  const auto t1 = std::chrono::steady_clock::now();
  const std::string back = tok.decode(ids);
  const auto t2 = std::chrono::steady_clock::now();
  const double encode_s = std::chrono::duration<double>(t1 - t0).count();
  const double decode_s = std::chrono::duration<double>(t2 - t1).count();
  std::printf("[%s] %zu bytes -> %zu tokens: encode %.3f s (%.1f MB/s), decode %.3f s\n",
              name.c_str(), text.size(), ids.size(), encode_s, text.size() / encode_s / 1e6,
              decode_s);
  EXPECT_EQ(back, text);
  EXPECT_LT(encode_s, 5.0);
}

TEST(TokenizerSpeed, Gpt2OneMegabyte) { measure("gpt-2"); }
TEST(TokenizerSpeed, LlamaSpmOneMegabyte) { measure("llama-spm"); }

}  // namespace
}  // namespace dspark
