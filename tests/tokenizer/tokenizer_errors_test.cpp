// Configuration and input errors are dspark::Error with a message that names the file and
// the offending component, never a crash or a silently different tokenizer.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/check.h"
#include "tokenizer/tokenizer.h"

namespace dspark {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

class TokenizerErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dspark_tok_err_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A minimal valid tokenizer.json with one component replaced.
  std::string write(const std::string& field, const std::string& value) {
    std::string model =
        R"({"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]})";
    std::string normalizer = "null", pre_tokenizer = "null", decoder = "null";
    if (field == "model") model = value;
    if (field == "normalizer") normalizer = value;
    if (field == "pre_tokenizer") pre_tokenizer = value;
    if (field == "decoder") decoder = value;
    const std::string text = R"({"version": "1.0", "added_tokens": [], "normalizer": )" +
                             normalizer + R"(, "pre_tokenizer": )" + pre_tokenizer +
                             R"(, "post_processor": null, "decoder": )" + decoder +
                             R"(, "model": )" + model + "}";
    std::ofstream(dir_ / "tokenizer.json") << text;
    return (dir_ / "tokenizer.json").string();
  }

  // The message of the dspark::Error that loading path throws ("" when it does not throw).
  static std::string load_error(const std::string& path) {
    try {
      Tokenizer::from_file(path);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

TEST_F(TokenizerErrors, ValidMinimalFileLoads) {
  const Tokenizer tok = Tokenizer::from_file(write("", ""));
  EXPECT_EQ(tok.encode("ab"), std::vector<int32_t>{2});
  EXPECT_EQ(tok.decode(std::vector<int32_t>{2, 0}), "ab a");  // no decoder: joined by spaces
}

TEST_F(TokenizerErrors, MissingFile) {
  const std::string path = (dir_ / "nope" / "tokenizer.json").string();
  EXPECT_THAT(load_error(path), AllOf(HasSubstr("cannot open"), HasSubstr(path)));
  EXPECT_THROW(Tokenizer::from_dir(dir_ / "missing_dir"), Error);
  EXPECT_THROW(Tokenizer::from_dir(dir_), Error);  // directory without tokenizer.json
}

TEST_F(TokenizerErrors, MalformedJson) {
  std::ofstream(dir_ / "tokenizer.json") << R"({"model": {"type": "BPE", "vocab": {)";
  const std::string path = (dir_ / "tokenizer.json").string();
  EXPECT_THAT(load_error(path), AllOf(HasSubstr("malformed JSON"), HasSubstr(path)));
  // Well-formed JSON of the wrong shape is reported too.
  std::ofstream(dir_ / "tokenizer.json") << R"({"model": {"type": "BPE", "vocab": [1, 2]}})";
  EXPECT_THAT(load_error(path), HasSubstr(path));
}

TEST_F(TokenizerErrors, UnsupportedModelType) {
  const std::string path = write("model", R"({"type": "WordPiece", "vocab": {"a": 0}})");
  EXPECT_THAT(load_error(path), AllOf(HasSubstr("model type 'WordPiece'"), HasSubstr(path)));
  const std::string unigram = write("model", R"({"type": "Unigram", "vocab": [["a", 0.0]]})");
  EXPECT_THAT(load_error(unigram), HasSubstr("'Unigram'"));
}

TEST_F(TokenizerErrors, UnsupportedComponents) {
  std::string path = write("normalizer", R"({"type": "NFKC"})");
  EXPECT_THAT(load_error(path), AllOf(HasSubstr("normalizer type 'NFKC'"), HasSubstr(path)));
  path = write("normalizer", R"({"type": "Sequence", "normalizers": [{"type": "Lowercase"}]})");
  EXPECT_THAT(load_error(path), HasSubstr("normalizer type 'Lowercase'"));
  path = write("pre_tokenizer", R"({"type": "BertPreTokenizer"})");
  EXPECT_THAT(load_error(path), AllOf(HasSubstr("pre_tokenizer type 'BertPreTokenizer'"),
                                      HasSubstr(path)));
  path = write("decoder", R"({"type": "WordPiece", "prefix": "##"})");
  EXPECT_THAT(load_error(path), AllOf(HasSubstr("decoder type 'WordPiece'"), HasSubstr(path)));
}

TEST_F(TokenizerErrors, BadModelContents) {
  std::string path = write("model", R"({"type": "BPE", "vocab": {"a": 0}, "merges": ["a c"]})");
  EXPECT_THAT(load_error(path), HasSubstr("'c', which is not in the vocabulary"));
  path = write("model", R"({"type": "BPE", "vocab": {"a": 0}, "unk_token": "<unk>"})");
  EXPECT_THAT(load_error(path), HasSubstr("unk_token '<unk>'"));
  path = write("pre_tokenizer", R"({"type": "Split", "pattern": {"Regex": "(unclosed"},
                                   "behavior": "Isolated", "invert": false})");
  EXPECT_THAT(load_error(path), AllOf(HasSubstr("cannot compile regex"), HasSubstr(path)));
  path = write("pre_tokenizer", R"({"type": "Split", "pattern": {"Regex": "a"},
                                   "behavior": "Sideways", "invert": false})");
  EXPECT_THAT(load_error(path), HasSubstr("'Sideways'"));
}

TEST_F(TokenizerErrors, BadInputAndIds) {
  const Tokenizer tok = Tokenizer::from_file(write("", ""));
  try {
    tok.encode("a\xFF" "b");
    FAIL() << "invalid UTF-8 accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("not valid UTF-8"), HasSubstr("offset 1")));
  }
  EXPECT_THROW(tok.id_to_token(3), Error);
  EXPECT_THROW(tok.id_to_token(-1), Error);
  EXPECT_FALSE(tok.is_special(99));
  // decode skips ids outside the vocabulary, as Hugging Face does.
  EXPECT_EQ(tok.decode(std::vector<int32_t>{2, 99, -5}), "ab");
}

TEST_F(TokenizerErrors, BadModelConfig) {
  write("", "");
  std::ofstream(dir_ / "tokenizer_config.json") << R"({"bos_token": "<s>"})";
  try {
    Tokenizer::from_dir(dir_);
    FAIL() << "unknown bos_token accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("bos_token '<s>'"), HasSubstr("tokenizer_config.json")));
  }
  std::ofstream(dir_ / "tokenizer_config.json") << "{";
  EXPECT_THROW(Tokenizer::from_dir(dir_), Error);
}

}  // namespace
}  // namespace dspark
