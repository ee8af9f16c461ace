// write_png: stores an 8-bit RGB image as a PNG file (libpng), replacing any file at path.
// A file that cannot be written (missing directory, no permission, full disk) throws a
// dspark::Error naming the path and libpng's reason.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>

namespace dspark::plot {

// rgb: [height, width, 3], rows top to bottom; its size must be width * height * 3.
void write_png(const std::filesystem::path& path, int64_t width, int64_t height, std::span<const uint8_t> rgb);

}  // namespace dspark::plot
