// write_safetensors for the stored-only dtypes an EAGLE-3 drafter needs (d2t I64, t2d BOOL):
// tags and bytes read back exactly next to computable tensors; the reader lists them but
// refuses to load them as weights; malformed ones are rejected when written.
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "loader/safetensors.h"

namespace dspark {
namespace {

namespace fs = std::filesystem;

TEST(SafetensorsIndexDtypes, I64AndBoolRoundTripNextToF32) {
  const fs::path dir = fs::temp_directory_path() / ("dspark_st_index_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::vector<int64_t> d2t{0, 5, -3, int64_t{1} << 40};
  const std::vector<uint8_t> t2d{1, 0, 0, 1, 1};
  const std::vector<float> w{1.5f, -2.0f};
  write_safetensors(dir / "model.safetensors",
                    {make_f32_tensor("w", {2}, w), make_i64_tensor("d2t", {4}, d2t), make_bool_tensor("t2d", {5}, t2d)});
  const SafetensorsFile file(dir / "model.safetensors");
  const TensorInfo& a = file.tensors().at("d2t");
  EXPECT_EQ(a.dtype_tag, "I64");
  EXPECT_FALSE(a.supported);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{4}));
  ASSERT_EQ(a.bytes.size(), 32u);
  std::vector<int64_t> back(4);
  std::memcpy(back.data(), a.bytes.data(), 32);
  EXPECT_EQ(back, d2t);
  const TensorInfo& b = file.tensors().at("t2d");
  EXPECT_EQ(b.dtype_tag, "BOOL");
  ASSERT_EQ(b.bytes.size(), 5u);
  for (size_t i = 0; i < t2d.size(); ++i) EXPECT_EQ(static_cast<uint8_t>(b.bytes[i]), t2d[i]) << i;

  const WeightStore store(dir);
  EXPECT_EQ(store.load_f32("w", std::vector<int64_t>{2}), w);
  EXPECT_EQ(store.find("d2t").dtype_tag, "I64");
  EXPECT_THROW(store.get("d2t"), std::exception);  // not a weight the engine computes in
  fs::remove_all(dir);
}

TEST(SafetensorsIndexDtypes, MalformedTensorsAreRejected) {
  const fs::path file = fs::temp_directory_path() / ("dspark_st_bad_" + std::to_string(::getpid()) + ".safetensors");
  EXPECT_THROW(make_bool_tensor("t2d", {2}, std::vector<uint8_t>{1, 2}), std::exception);  // not 0/1
  EXPECT_THROW(make_i64_tensor("d2t", {3}, std::vector<int64_t>{1, 2}), std::exception);    // count
  TensorToWrite short_i64 = make_i64_tensor("d2t", {2}, std::vector<int64_t>{1, 2});
  short_i64.bytes.resize(12);
  EXPECT_THROW(write_safetensors(file, {short_i64}), std::exception);
  TensorToWrite unknown = make_i64_tensor("d2t", {1}, std::vector<int64_t>{1});
  unknown.dtype_tag = "I128";
  EXPECT_THROW(write_safetensors(file, {unknown}), std::exception);
  EXPECT_EQ(safetensors_tag_size("I64"), 8u);
  EXPECT_EQ(safetensors_tag_size("BOOL"), 1u);
  EXPECT_FALSE(fs::exists(file));
}

}  // namespace
}  // namespace dspark
