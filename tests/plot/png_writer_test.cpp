#include "plot/png_writer.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <png.h>
#include <unistd.h>

#include "core/check.h"

namespace dspark::plot {
namespace {

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::path(testing::TempDir()) / ("dspark_png_test_" + std::to_string(::getpid()) + "_" + name);
}

// Decodes path with libpng into 8-bit RGB.
std::vector<uint8_t> read_png(const std::filesystem::path& path, int64_t& width, int64_t& height) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  EXPECT_NE(png_image_begin_read_from_file(&image, path.c_str()), 0) << image.message;
  image.format = PNG_FORMAT_RGB;
  width = image.width;
  height = image.height;
  std::vector<uint8_t> rgb(PNG_IMAGE_SIZE(image));
  EXPECT_NE(png_image_finish_read(&image, nullptr, rgb.data(), 0, nullptr), 0) << image.message;
  png_image_free(&image);
  return rgb;
}

TEST(PngWriter, RoundTripKeepsEveryPixel) {
  const int64_t width = 7, height = 5;  // odd sizes: no row padding assumptions
  std::vector<uint8_t> rgb(width * height * 3);
  for (int64_t y = 0; y < height; ++y) {
    for (int64_t x = 0; x < width; ++x) {
      for (int64_t c = 0; c < 3; ++c) {
        rgb[(y * width + x) * 3 + c] = static_cast<uint8_t>((x * 37 + y * 91 + c * 101) % 256);
      }
    }
  }
  rgb[0] = 0;  // both extremes of a channel
  rgb[1] = 255;
  const auto path = temp_path("round_trip.png");
  write_png(path, width, height, rgb);

  std::ifstream in(path, std::ios::binary);
  char signature[8] = {};
  in.read(signature, 8);
  EXPECT_EQ(std::memcmp(signature, "\x89PNG\r\n\x1a\n", 8), 0);

  int64_t read_width = 0, read_height = 0;
  const std::vector<uint8_t> back = read_png(path, read_width, read_height);
  EXPECT_EQ(read_width, width);
  EXPECT_EQ(read_height, height);
  ASSERT_EQ(back.size(), rgb.size());
  for (size_t i = 0; i < rgb.size(); ++i) ASSERT_EQ(back[i], rgb[i]) << "byte " << i;
  std::filesystem::remove(path);
}

TEST(PngWriter, ReplacesAnExistingFile) {
  const auto path = temp_path("replace.png");
  write_png(path, 2, 1, std::vector<uint8_t>(6, 10));
  write_png(path, 1, 1, std::vector<uint8_t>{1, 2, 3});
  int64_t w = 0, h = 0;
  EXPECT_EQ(read_png(path, w, h), (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(w, 1);
  std::filesystem::remove(path);
}

TEST(PngWriter, UnwritablePathIsAClearError) {
  const std::filesystem::path path = "/nonexistent-dspark-dir/chart.png";
  try {
    write_png(path, 1, 1, std::vector<uint8_t>{0, 0, 0});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), testing::HasSubstr("cannot write PNG file /nonexistent-dspark-dir/chart.png"));
  }
}

TEST(PngWriter, RejectsABufferOfTheWrongSize) {
  EXPECT_THROW(write_png(temp_path("bad.png"), 2, 2, std::vector<uint8_t>(11)), Error);
  EXPECT_THROW(write_png(temp_path("bad.png"), 0, 2, std::vector<uint8_t>()), Error);
}

}  // namespace
}  // namespace dspark::plot
