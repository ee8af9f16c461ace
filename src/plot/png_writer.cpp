#include "plot/png_writer.h"

#include <cstring>
#include <string>

#include <png.h>

#include "core/check.h"

namespace dspark::plot {

void write_png(const std::filesystem::path& path, int64_t width, int64_t height, std::span<const uint8_t> rgb) {
  DSPARK_CHECK(width >= 1 && height >= 1, "a PNG needs at least one pixel, got {}x{}", width, height);
  DSPARK_CHECK(width <= (int64_t{1} << 24) && height <= (int64_t{1} << 24), "{}x{} is too large for a PNG here",
               width, height);
  DSPARK_CHECK(static_cast<int64_t>(rgb.size()) == width * height * 3,
               "an RGB image of {}x{} needs {} bytes, got {}", width, height, width * height * 3, rgb.size());
  // libpng's simplified API reports errors in image.message instead of longjmp-ing
  // through our frames.
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = PNG_FORMAT_RGB;
  const bool ok = png_image_write_to_file(&image, path.c_str(), /*convert_to_8bit=*/0, rgb.data(),
                                          /*row_stride=*/static_cast<png_int_32>(width * 3), nullptr) != 0;
  const std::string reason = image.message;
  png_image_free(&image);
  DSPARK_CHECK(ok, "cannot write PNG file {}: {}", path.string(), reason);
}

}  // namespace dspark::plot
