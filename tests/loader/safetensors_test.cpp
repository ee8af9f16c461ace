#include "loader/safetensors.h"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/check.h"

namespace dspark {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

// A fresh directory per test, removed afterwards.
class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           fmt::format("dspark_st_{}_{}_{}", ::getpid(), info->test_suite_name(), info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes a file from a raw header text and data bytes (for corrupt files).
  fs::path write_raw(const std::string& file, const std::string& header, size_t data_bytes,
                     std::optional<uint64_t> declared_size = std::nullopt) {
    const fs::path path = dir_ / file;
    std::ofstream out(path, std::ios::binary);
    const uint64_t n = declared_size.value_or(header.size());
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << header;
    out << std::string(data_bytes, '\x01');
    return path;
  }

  fs::path dir_;
};

std::vector<float> iota_values(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = (static_cast<float>(i) - n / 2.0f) * scale;
  return v;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Expects an Error whose message contains every piece.
template <typename F>
void expect_error(F&& f, std::initializer_list<std::string> pieces) {
  try {
    f();
    ADD_FAILURE() << "no Error thrown";
  } catch (const Error& e) {
    for (const std::string& piece : pieces) EXPECT_THAT(e.what(), HasSubstr(piece));
  }
}

TEST_F(SafetensorsTest, F32RoundTripsExactlyWithMetadata) {
  const std::vector<float> a = iota_values(6, 0.37f);
  const std::vector<float> b = {1e-30f, -3.5f, 65504.0f, 0.0f};
  const fs::path path = dir_ / "model.safetensors";
  write_safetensors(path, {make_f32_tensor("a", {2, 3}, a), make_f32_tensor("b.weight", {4}, b)},
                    {{"format", "pt"}, {"note", "x"}});
  const SafetensorsFile file(path);
  ASSERT_EQ(file.tensors().size(), 2u);
  EXPECT_EQ(file.metadata().at("format"), "pt");
  EXPECT_EQ(file.metadata().at("note"), "x");
  const TensorInfo& info = file.tensors().at("a");
  EXPECT_EQ(info.dtype, DType::kF32);
  EXPECT_EQ(info.dtype_tag, "F32");
  EXPECT_EQ(info.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(info.num_elements(), 6);

  const WeightStore store(dir_);
  EXPECT_EQ(store.load_f32("a", std::vector<int64_t>{2, 3}), a);
  EXPECT_EQ(store.load_f32("b.weight", std::vector<int64_t>{4}), b);
  EXPECT_EQ(store.names(), (std::vector<std::string>{"a", "b.weight"}));
  EXPECT_TRUE(store.contains("a"));
  EXPECT_FALSE(store.contains("c"));
}

TEST_F(SafetensorsTest, HeaderIsPaddedAndDataAlignedAndNoTempFileLeft) {
  const fs::path path = dir_ / "x.safetensors";
  write_safetensors(path, {make_f32_tensor("abc", {3}, iota_values(3, 1.0f))});
  write_safetensors(path, {make_f32_tensor("abcd", {1}, std::vector<float>{7.0f})});  // overwrite
  const std::string bytes = read_file(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + n + 4);
  const std::string header = bytes.substr(8, n);
  EXPECT_EQ(header.find_first_of(std::string(1, '\0')), std::string::npos);
  EXPECT_NE(header.find("abcd"), std::string::npos);
  EXPECT_EQ(json::parse(header)["abcd"]["data_offsets"], json::array({0, 4}));
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++entries;
  EXPECT_EQ(entries, 1) << "temporary file left behind";
}

TEST_F(SafetensorsTest, Bf16RoundsToNearestEvenAndReadsBack) {
  const float tie_down = 1.0f + std::ldexp(1.0f, -8);     // halfway between 1 and 1+2^-7
  const float tie_up = 1.0f + 3 * std::ldexp(1.0f, -8);   // halfway, odd below -> rounds up
  const float above = 1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20);
  const std::vector<float> values = {tie_down, tie_up, above, -2.5f, 3.0f};
  write_safetensors(dir_ / "model.safetensors", {make_bf16_tensor("w", {5}, values)});
  const WeightStore store(dir_);
  const TensorInfo& info = store.get("w");
  EXPECT_EQ(info.dtype, DType::kBF16);
  ASSERT_EQ(info.bytes.size(), 10u);
  uint16_t bits[5];
  std::memcpy(bits, info.bytes.data(), 10);
  EXPECT_EQ(bits[0], 0x3f80);
  EXPECT_EQ(bits[1], 0x3f82);
  EXPECT_EQ(bits[2], 0x3f81);
  const std::vector<float> expected = {1.0f, 1.0f + std::ldexp(1.0f, -6), 1.0f + std::ldexp(1.0f, -7),
                                       -2.5f, 3.0f};
  EXPECT_EQ(store.load_f32("w", std::vector<int64_t>{5}), expected);
}

TEST_F(SafetensorsTest, F16RoundTrips) {
  const std::vector<float> values = {1.0f, -0.5f, 65504.0f, std::ldexp(1.0f, -24), 0.1f};
  write_safetensors(dir_ / "model.safetensors", {make_f16_tensor("h", {1, 5}, values)});
  const WeightStore store(dir_);
  EXPECT_EQ(store.get("h").dtype, DType::kF16);
  const std::vector<float> back = store.load_f32("h", std::vector<int64_t>{1, 5});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(back[i], values[i]);
  EXPECT_NEAR(back[4], 0.1f, 0.1f * std::ldexp(1.0f, -11));  // half an f16 ulp
}

TEST_F(SafetensorsTest, F8E4M3RoundTrips) {
  // e4m3fn: 0x38 = 1.0, 0x40 = 2.0, 0xb8 = -1.0, 0x01 = 2^-9 (smallest subnormal),
  // 0x7e = 448 (largest finite), 0x7f = NaN.
  const std::vector<uint8_t> raw = {0x38, 0x40, 0xb8, 0x01, 0x7e, 0x7f};
  TensorToWrite t{"f8", DType::kF8E4M3, {2, 3}, {}};
  for (uint8_t b : raw) t.bytes.push_back(static_cast<std::byte>(b));
  write_safetensors(dir_ / "model.safetensors", {t});
  const WeightStore store(dir_);
  EXPECT_EQ(store.get("f8").dtype_tag, "F8_E4M3");
  const std::vector<float> back = store.load_f32("f8", std::vector<int64_t>{2, 3});
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], 2.0f);
  EXPECT_EQ(back[2], -1.0f);
  EXPECT_EQ(back[3], std::ldexp(1.0f, -9));
  EXPECT_EQ(back[4], 448.0f);
  EXPECT_TRUE(std::isnan(back[5]));
}

TEST_F(SafetensorsTest, MisalignedTensorAfterOddBf16LoadsCorrectly) {
  // 3 bf16 values = 6 bytes, so the f32 tensor after it starts at offset 6 (not 4-aligned).
  const std::vector<float> f = iota_values(5, 0.25f);
  write_safetensors(dir_ / "model.safetensors",
                    {make_bf16_tensor("a", {3}, std::vector<float>{1, 2, 3}),
                     make_f32_tensor("b", {5}, f)});
  const WeightStore store(dir_);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(store.get("b").bytes.data()) % 4, 2u);
  EXPECT_EQ(store.load_f32("b", std::vector<int64_t>{5}), f);
  std::vector<float> out(3);
  store.load_f32_into("a", std::vector<int64_t>{3}, out);
  EXPECT_EQ(out, (std::vector<float>{1, 2, 3}));
}

TEST_F(SafetensorsTest, EmptyAndScalarTensors) {
  write_safetensors(dir_ / "model.safetensors",
                    {make_f32_tensor("empty", {0, 4}, std::vector<float>{}),
                     make_f32_tensor("scalar", {}, std::vector<float>{42.0f}),
                     make_f32_tensor("after", {1}, std::vector<float>{1.0f})});
  const WeightStore store(dir_);
  EXPECT_TRUE(store.load_f32("empty", std::vector<int64_t>{0, 4}).empty());
  EXPECT_EQ(store.load_f32("scalar", std::vector<int64_t>{}), std::vector<float>{42.0f});
  EXPECT_EQ(store.load_f32("after", std::vector<int64_t>{1}), std::vector<float>{1.0f});
}

TEST_F(SafetensorsTest, ShapeMismatchNamesFileTensorAndBothShapes) {
  write_safetensors(dir_ / "model.safetensors",
                    {make_f32_tensor("w", {2, 3}, iota_values(6, 1.0f))});
  const WeightStore store(dir_);
  expect_error([&] { store.load_f32("w", std::vector<int64_t>{3, 2}); },
               {(dir_ / "model.safetensors").string() + ": tensor 'w' has shape [2, 3], expected [3, 2]"});
  std::vector<float> small(5);
  expect_error([&] { store.load_f32_into("w", std::vector<int64_t>{2, 3}, small); },
               {"'w'", "5"});
}

TEST_F(SafetensorsTest, MissingTensorNamesDirectoryAndTensor) {
  write_safetensors(dir_ / "model.safetensors", {make_f32_tensor("w", {1}, std::vector<float>{1})});
  const WeightStore store(dir_);
  expect_error([&] { store.get("model.norm.weight"); }, {dir_.string(), "'model.norm.weight'"});
}

TEST_F(SafetensorsTest, ShardedDirectoryWithIndexOpensEachShardOnce) {
  write_safetensors(dir_ / "model-00001-of-00002.safetensors",
                    {make_f32_tensor("a", {2}, std::vector<float>{1, 2}),
                     make_bf16_tensor("b", {1}, std::vector<float>{3})});
  write_safetensors(dir_ / "model-00002-of-00002.safetensors",
                    {make_f32_tensor("c", {1}, std::vector<float>{4}),
                     make_f32_tensor("d", {1}, std::vector<float>{5})});
  json index = {{"metadata", {{"total_size", 18}}},
                {"weight_map",
                 {{"a", "model-00001-of-00002.safetensors"},
                  {"b", "model-00001-of-00002.safetensors"},
                  {"c", "model-00002-of-00002.safetensors"},
                  {"d", "model-00002-of-00002.safetensors"}}}};
  std::ofstream(dir_ / "model.safetensors.index.json") << index.dump(2);
  const WeightStore store(dir_);
  EXPECT_EQ(store.num_files(), 2u);
  EXPECT_EQ(store.names(), (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(store.load_f32("b", std::vector<int64_t>{1}), std::vector<float>{3});
  EXPECT_EQ(store.load_f32("d", std::vector<int64_t>{1}), std::vector<float>{5});
  EXPECT_EQ(store.get("c").file.filename(), "model-00002-of-00002.safetensors");
}

TEST_F(SafetensorsTest, IndexListingTensorMissingFromShardNamesBoth) {
  write_safetensors(dir_ / "shard1.safetensors", {make_f32_tensor("a", {1}, std::vector<float>{1})});
  json index = {{"weight_map", {{"a", "shard1.safetensors"}, {"ghost", "shard1.safetensors"}}}};
  std::ofstream(dir_ / "model.safetensors.index.json") << index.dump();
  expect_error([&] { WeightStore store(dir_); },
               {"model.safetensors.index.json", "'ghost'", "shard1.safetensors"});
}

TEST_F(SafetensorsTest, IndexListingMissingShardFails) {
  json index = {{"weight_map", {{"a", "nowhere.safetensors"}}}};
  std::ofstream(dir_ / "model.safetensors.index.json") << index.dump();
  expect_error([&] { WeightStore store(dir_); }, {"nowhere.safetensors", "'a'", "does not exist"});
}

TEST_F(SafetensorsTest, LoneSafetensorsFileIsAccepted) {
  write_safetensors(dir_ / "weights.safetensors", {make_f32_tensor("w", {1}, std::vector<float>{9})});
  const WeightStore store(dir_);
  EXPECT_EQ(store.load_f32("w", std::vector<int64_t>{1}), std::vector<float>{9});
  const WeightStore from_file(dir_ / "weights.safetensors");
  EXPECT_TRUE(from_file.contains("w"));
}

TEST_F(SafetensorsTest, DirectoryWithoutWeightsSaysWhatWasLookedFor) {
  std::ofstream(dir_ / "config.json") << "{}";
  expect_error([&] { WeightStore store(dir_); },
               {dir_.string(), "model.safetensors", "model.safetensors.index.json",
                "*.safetensors"});
  expect_error([&] { WeightStore store(dir_ / "absent"); }, {"absent", "does not exist"});
}

TEST_F(SafetensorsTest, SeveralLoneFilesWithoutIndexAreAmbiguous) {
  write_safetensors(dir_ / "a.safetensors", {make_f32_tensor("w", {1}, std::vector<float>{1})});
  write_safetensors(dir_ / "b.safetensors", {make_f32_tensor("v", {1}, std::vector<float>{1})});
  expect_error([&] { WeightStore store(dir_); }, {"a.safetensors", "b.safetensors"});
}

TEST_F(SafetensorsTest, UnsupportedDtypeIsListedButFailsWhenRequested) {
  // I64 position ids next to an f32 weight; both pass validation at open.
  const std::string header =
      R"({"pos":{"dtype":"I64","shape":[2],"data_offsets":[0,16]},)"
      R"("w":{"dtype":"F32","shape":[1],"data_offsets":[16,20]}})";
  const fs::path path = write_raw("model.safetensors", header, 20);
  const WeightStore store(dir_);
  EXPECT_TRUE(store.contains("pos"));
  EXPECT_FALSE(store.get("w").bytes.empty());
  expect_error([&] { store.get("pos"); }, {path.string(), "'pos'", "I64"});
  expect_error([&] { store.load_f32("pos", std::vector<int64_t>{2}); }, {"'pos'", "I64"});
  // Validation still covers them: an F64 tensor with the wrong byte count fails at open.
  write_raw("model.safetensors", R"({"d":{"dtype":"F64","shape":[2],"data_offsets":[0,8]}})", 8);
  expect_error([&] { WeightStore s(dir_); }, {"'d'", "8 bytes", "16"});
}

struct CorruptCase {
  std::string label;
  std::string header;
  size_t data_bytes;
  std::vector<std::string> pieces;  // besides the file name
};

TEST_F(SafetensorsTest, EveryCorruptionNamesFileAndTensor) {
  const std::vector<CorruptCase> cases = {
      {"offsets past data", R"({"t1":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8,
       {"'t1'", "past the end"}},
      {"begin after end", R"({"t2":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", 8,
       {"'t2'", "[8, 4]"}},
      {"byte count", R"({"t3":{"dtype":"BF16","shape":[3],"data_offsets":[0,8]}})", 8,
       {"'t3'", "8 bytes", "needs 6"}},
      {"overlap",
       R"({"t4a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
       R"("t4b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       12, {"'t4a'", "'t4b'", "overlaps"}},
      {"unknown dtype", R"({"t5":{"dtype":"Q4","shape":[2],"data_offsets":[0,1]}})", 8,
       {"'t5'", "'Q4'"}},
      {"negative dim", R"({"t6":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 8,
       {"'t6'", "-1"}},
      {"missing offsets", R"({"t7":{"dtype":"F32","shape":[1]}})", 8, {"'t7'", "data_offsets"}},
      {"entry not object", R"({"t8":[1,2]})", 8, {"'t8'", "object"}},
      {"negative offset", R"({"t9":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", 8,
       {"'t9'", "data_offsets"}},
      {"metadata value", R"({"__metadata__":{"k":1}})", 0, {"__metadata__", "'k'"}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].label);
    const std::string name = fmt::format("corrupt{}.safetensors", i);
    const fs::path path = write_raw(name, cases[i].header, cases[i].data_bytes);
    std::vector<std::string> pieces = cases[i].pieces;
    pieces.push_back(path.string());
    try {
      SafetensorsFile file(path);
      ADD_FAILURE() << "no Error for " << cases[i].label;
    } catch (const Error& e) {
      for (const std::string& piece : pieces) EXPECT_THAT(e.what(), HasSubstr(piece));
    }
  }
}

TEST_F(SafetensorsTest, StructuralCorruptionsNameTheFile) {
  const fs::path tiny = dir_ / "tiny.safetensors";
  std::ofstream(tiny, std::ios::binary) << "abc";
  expect_error([&] { SafetensorsFile f(tiny); }, {tiny.string(), "shorter than"});

  const fs::path empty = dir_ / "empty.safetensors";
  std::ofstream(empty, std::ios::binary).flush();
  expect_error([&] { SafetensorsFile f(empty); }, {empty.string(), "0 bytes"});

  const fs::path long_header = write_raw("long.safetensors", "{}", 0, uint64_t{1} << 40);
  expect_error([&] { SafetensorsFile f(long_header); },
               {long_header.string(), "header length", "past the end"});

  const fs::path bad_json = write_raw("badjson.safetensors", R"({"a": {"dtype": )", 0);
  expect_error([&] { SafetensorsFile f(bad_json); }, {bad_json.string(), "not valid JSON"});

  const fs::path not_object = write_raw("array.safetensors", "[1, 2]", 0);
  expect_error([&] { SafetensorsFile f(not_object); }, {not_object.string(), "JSON object"});
}

TEST_F(SafetensorsTest, TruncatedFileFailsAtOpen) {
  const fs::path full = dir_ / "full.safetensors";
  write_safetensors(full, {make_f32_tensor("first", {64}, iota_values(64, 1.0f)),
                           make_f32_tensor("second", {1024}, iota_values(1024, 2.0f))});
  const std::string bytes = read_file(full);
  // Cut inside the data: the header survives, the second tensor does not.
  const fs::path half = dir_ / "half.safetensors";
  std::ofstream(half, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  expect_error([&] { SafetensorsFile f(half); }, {half.string(), "'second'", "past the end"});
  // Cut inside the header.
  const fs::path stub = dir_ / "stub.safetensors";
  std::ofstream(stub, std::ios::binary) << bytes.substr(0, 40);
  expect_error([&] { SafetensorsFile f(stub); }, {stub.string(), "header length"});
}

TEST_F(SafetensorsTest, WriterRejectsInconsistentTensors) {
  TensorToWrite bad{"w", DType::kBF16, {3}, std::vector<std::byte>(4)};
  expect_error([&] { write_safetensors(dir_ / "o.safetensors", {bad}); }, {"'w'", "4 bytes", "6"});
  auto t = make_f32_tensor("dup", {1}, std::vector<float>{1});
  expect_error([&] { write_safetensors(dir_ / "o.safetensors", {t, t}); }, {"'dup'", "twice"});
  expect_error([&] { make_f32_tensor("n", {2, 2}, std::vector<float>{1, 2, 3}); },
               {"'n'", "[2, 2]"});
  EXPECT_FALSE(fs::exists(dir_ / "o.safetensors"));
  expect_error([&] { write_safetensors(dir_ / "missing" / "o.safetensors", {t}); }, {"missing"});
}

// The stories260K checkpoint in shared data: a real file written by the Python library.
TEST(Stories260K, TensorNamesShapesAndValues) {
  const fs::path dir = fs::path(DSPARK_SHARED_DIR) / "data/models/stories260K-hf";
  const WeightStore store(dir);
  EXPECT_EQ(store.num_files(), 1u);
  EXPECT_EQ(store.names().size(), 1u + 5 * 9 + 1);  // embeddings, 5 layers of 9, final norm
  EXPECT_EQ(store.get("model.embed_tokens.weight").shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(store.get("model.layers.4.self_attn.k_proj.weight").shape,
            (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(store.get("model.layers.0.mlp.down_proj.weight").shape,
            (std::vector<int64_t>{64, 172}));
  EXPECT_FALSE(store.contains("model.layers.5.input_layernorm.weight"));
  EXPECT_FALSE(store.contains("lm_head.weight"));  // tied embeddings
  const SafetensorsFile file(dir / "model.safetensors");
  EXPECT_EQ(file.metadata().at("format"), "pt");

  // Values: compare with the bytes read independently of the mapping.
  const std::vector<float> embed =
      store.load_f32("model.embed_tokens.weight", std::vector<int64_t>{512, 64});
  const std::string raw = read_file(dir / "model.safetensors");
  uint64_t n = 0;
  std::memcpy(&n, raw.data(), 8);
  const auto offsets = json::parse(raw.substr(8, n))["model.embed_tokens.weight"]["data_offsets"];
  std::vector<float> expected(512 * 64);
  std::memcpy(expected.data(), raw.data() + 8 + n + offsets[0].get<size_t>(), expected.size() * 4);
  EXPECT_EQ(embed, expected);
  float sum_sq = 0;
  for (float v : embed) sum_sq += v * v;
  EXPECT_GT(sum_sq, 0.0f);
}

}  // namespace
}  // namespace dspark
