// SafetensorsFile: opening and validating one .safetensors file.
#include "loader/safetensors.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <optional>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/check.h"

namespace dspark {

using nlohmann::json;

static_assert(std::endian::native == std::endian::little,
              "safetensors stores little-endian data; this reader maps it as is");

namespace {

struct DTypeTag {
  std::string_view tag;
  size_t size;                  // bytes per element
  std::optional<DType> dtype;   // nullopt: valid in the format, not computable here
};

// Every dtype of the safetensors format with a whole number of bytes per element.
constexpr std::array<DTypeTag, 15> kDTypeTags = {{
    {"F32", 4, DType::kF32},
    {"BF16", 2, DType::kBF16},
    {"F16", 2, DType::kF16},
    {"F8_E4M3", 1, DType::kF8E4M3},
    {"F8_E5M2", 1, std::nullopt},
    {"F64", 8, std::nullopt},
    {"I64", 8, std::nullopt},
    {"U64", 8, std::nullopt},
    {"I32", 4, std::nullopt},
    {"U32", 4, std::nullopt},
    {"I16", 2, std::nullopt},
    {"U16", 2, std::nullopt},
    {"I8", 1, DType::kI8},
    {"U8", 1, std::nullopt},
    {"BOOL", 1, std::nullopt},
}};

const DTypeTag* find_dtype_tag(std::string_view tag) {
  for (const DTypeTag& entry : kDTypeTags)
    if (entry.tag == tag) return &entry;
  return nullptr;
}

std::string describe(const json& value) {
  std::string text = value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return fmt::format("{} {}", value.type_name(), text);
}

// A non-negative integer header value, or nullopt.
std::optional<uint64_t> as_count(const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0)
    return static_cast<uint64_t>(value.get<int64_t>());
  return std::nullopt;
}

struct Extent {
  uint64_t begin;
  uint64_t end;
  const std::string* name;
};

}  // namespace

std::string format_shape(std::span<const int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::string_view safetensors_dtype_tag(DType dtype) {
  for (const DTypeTag& entry : kDTypeTags)
    if (entry.dtype == dtype) return entry.tag;
  DSPARK_FAIL("no safetensors dtype for {}", dtype_name(dtype));
}

size_t safetensors_tag_size(std::string_view tag) {
  const DTypeTag* entry = find_dtype_tag(tag);
  DSPARK_CHECK(entry, "'{}' is not a safetensors dtype", tag);
  return entry->size;
}

int64_t TensorInfo::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path) : file_(path) {
  const std::string file = path.string();
  const std::span<const std::byte> bytes = file_.bytes();
  DSPARK_CHECK(bytes.size() >= 8,
               "{}: not a safetensors file: {} bytes, shorter than the 8-byte header length", file,
               bytes.size());
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);
  DSPARK_CHECK(header_size <= bytes.size() - 8,
               "{}: header length {} runs past the end of the file ({} bytes): truncated, or not "
               "a safetensors file",
               file, header_size, bytes.size());

  std::string_view text(reinterpret_cast<const char*>(bytes.data()) + 8, header_size);
  // Writers pad the header with spaces; tolerate NUL padding too.
  while (!text.empty() && (text.back() == ' ' || text.back() == '\0')) text.remove_suffix(1);
  json header;
  try {
    header = json::parse(text);
  } catch (const json::exception& e) {
    DSPARK_FAIL("{}: header is not valid JSON: {}", file, e.what());
  }
  DSPARK_CHECK(header.is_object(), "{}: header must be a JSON object, got {}", file,
               describe(header));

  const std::span<const std::byte> data = bytes.subspan(8 + header_size);
  std::vector<Extent> extents;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      DSPARK_CHECK(entry.is_object(), "{}: __metadata__ must be an object, got {}", file,
                   describe(entry));
      for (const auto& [key, value] : entry.items()) {
        DSPARK_CHECK(value.is_string(), "{}: __metadata__ entry '{}' must be a string, got {}",
                     file, key, describe(value));
        metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    DSPARK_CHECK(entry.is_object(), "{}: tensor '{}': header entry must be an object, got {}",
                 file, name, describe(entry));

    auto dtype_it = entry.find("dtype");
    DSPARK_CHECK(dtype_it != entry.end() && dtype_it->is_string(),
                 "{}: tensor '{}': 'dtype' must be a string", file, name);
    const std::string tag = dtype_it->get<std::string>();
    const DTypeTag* dtype = find_dtype_tag(tag);
    DSPARK_CHECK(dtype, "{}: tensor '{}' has unknown dtype '{}'", file, name, tag);

    auto shape_it = entry.find("shape");
    DSPARK_CHECK(shape_it != entry.end() && shape_it->is_array(),
                 "{}: tensor '{}': 'shape' must be a list of non-negative integers", file, name);
    std::vector<int64_t> shape;
    uint64_t num_bytes = dtype->size;
    for (const json& dim : *shape_it) {
      const std::optional<uint64_t> d = as_count(dim);
      DSPARK_CHECK(d && *d <= uint64_t{INT64_MAX},
                   "{}: tensor '{}': shape entry {} is not a non-negative integer", file, name,
                   dim.dump());
      DSPARK_CHECK(!__builtin_mul_overflow(num_bytes, *d, &num_bytes),
                   "{}: tensor '{}': shape {} is too large", file, name, shape_it->dump());
      shape.push_back(static_cast<int64_t>(*d));
    }

    auto offsets_it = entry.find("data_offsets");
    std::optional<uint64_t> begin, end;
    if (offsets_it != entry.end() && offsets_it->is_array() && offsets_it->size() == 2) {
      begin = as_count((*offsets_it)[0]);
      end = as_count((*offsets_it)[1]);
    }
    DSPARK_CHECK(begin && end,
                 "{}: tensor '{}': 'data_offsets' must be two non-negative integers [begin, end]",
                 file, name);
    DSPARK_CHECK(*begin <= *end, "{}: tensor '{}': data_offsets [{}, {}] begin after they end",
                 file, name, *begin, *end);
    DSPARK_CHECK(*end <= data.size(),
                 "{}: tensor '{}': data_offsets [{}, {}] reach past the end of the data ({} "
                 "bytes): file truncated or header wrong",
                 file, name, *begin, *end, data.size());
    DSPARK_CHECK(*end - *begin == num_bytes,
                 "{}: tensor '{}' holds {} bytes, but shape {} of {} needs {}", file, name,
                 *end - *begin, format_shape(shape), tag, num_bytes);

    TensorInfo info;
    info.name = name;
    info.dtype_tag = tag;
    info.supported = dtype->dtype.has_value();
    if (dtype->dtype) info.dtype = *dtype->dtype;
    info.shape = std::move(shape);
    info.bytes = data.subspan(*begin, *end - *begin);
    info.file = path;
    auto [it, inserted] = tensors_.emplace(name, std::move(info));
    if (*end > *begin) extents.push_back({*begin, *end, &it->first});
  }

  std::sort(extents.begin(), extents.end(),
            [](const Extent& a, const Extent& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < extents.size(); ++i) {
    const Extent& prev = extents[i - 1];
    const Extent& cur = extents[i];
    DSPARK_CHECK(prev.end <= cur.begin,
                 "{}: tensor '{}' (bytes [{}, {})) overlaps tensor '{}' (bytes [{}, {}))", file,
                 *cur.name, cur.begin, cur.end, *prev.name, prev.begin, prev.end);
  }
}

}  // namespace dspark
