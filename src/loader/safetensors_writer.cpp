// write_safetensors and the helpers that build tensors to write.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "loader/safetensors.h"

namespace dspark {

using nlohmann::json;

namespace {

int64_t checked_num_elements(const std::string& name, const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    DSPARK_CHECK(d >= 0, "tensor '{}': negative dimension in shape {}", name, format_shape(shape));
    DSPARK_CHECK(!__builtin_mul_overflow(n, d, &n), "tensor '{}': shape {} is too large", name,
                 format_shape(shape));
  }
  return n;
}

template <typename T>
TensorToWrite make_tensor(std::string name, std::vector<int64_t> shape, DType dtype,
                          std::span<const float> values, T (*convert)(float)) {
  const int64_t n = checked_num_elements(name, shape);
  DSPARK_CHECK(static_cast<int64_t>(values.size()) == n,
               "tensor '{}': {} values given for shape {} ({} elements)", name, values.size(),
               format_shape(shape), n);
  TensorToWrite t{std::move(name), dtype, std::move(shape), {}};
  t.bytes.resize(values.size() * sizeof(T));
  for (size_t i = 0; i < values.size(); ++i) {
    const T v = convert(values[i]);
    std::memcpy(t.bytes.data() + i * sizeof(T), &v, sizeof(T));
  }
  return t;
}

float identity(float f) { return f; }

// Closes the descriptor and removes the temporary file unless released.
class TempFile {
 public:
  explicit TempFile(std::filesystem::path path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    DSPARK_CHECK(fd_ >= 0, "cannot create {}: {}", path_.string(), std::strerror(errno));
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  void write(const void* data, size_t size) {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
      const ssize_t written = ::write(fd_, p, size);
      if (written < 0 && errno == EINTR) continue;
      DSPARK_CHECK(written > 0, "cannot write {}: {}", path_.string(), std::strerror(errno));
      p += written;
      size -= static_cast<size_t>(written);
    }
  }

  // Flushes to disk and renames over `target`, so readers see the old file or the new one.
  void commit(const std::filesystem::path& target) {
    DSPARK_CHECK(::fsync(fd_) == 0, "cannot flush {}: {}", path_.string(), std::strerror(errno));
    const int rc = ::close(fd_);
    fd_ = -1;
    DSPARK_CHECK(rc == 0, "cannot close {}: {}", path_.string(), std::strerror(errno));
    DSPARK_CHECK(::rename(path_.c_str(), target.c_str()) == 0, "cannot rename {} to {}: {}",
                 path_.string(), target.string(), std::strerror(errno));
    committed_ = true;
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace

TensorToWrite make_f32_tensor(std::string name, std::vector<int64_t> shape,
                              std::span<const float> values) {
  return make_tensor<float>(std::move(name), std::move(shape), DType::kF32, values, identity);
}

TensorToWrite make_bf16_tensor(std::string name, std::vector<int64_t> shape,
                               std::span<const float> values) {
  return make_tensor<uint16_t>(std::move(name), std::move(shape), DType::kBF16, values,
                               float_to_bf16);
}

TensorToWrite make_f16_tensor(std::string name, std::vector<int64_t> shape,
                              std::span<const float> values) {
  return make_tensor<uint16_t>(std::move(name), std::move(shape), DType::kF16, values,
                               float_to_f16);
}

TensorToWrite make_i8_tensor(std::string name, std::vector<int64_t> shape, std::span<const int8_t> values) {
  const int64_t n = checked_num_elements(name, shape);
  DSPARK_CHECK(static_cast<int64_t>(values.size()) == n, "tensor '{}': {} values given for shape {} ({} elements)",
               name, values.size(), format_shape(shape), n);
  TensorToWrite t{std::move(name), DType::kI8, std::move(shape), {}};
  t.bytes.resize(values.size());
  std::memcpy(t.bytes.data(), values.data(), values.size());
  return t;
}

TensorToWrite make_i64_tensor(std::string name, std::vector<int64_t> shape, std::span<const int64_t> values) {
  const int64_t n = checked_num_elements(name, shape);
  DSPARK_CHECK(static_cast<int64_t>(values.size()) == n, "tensor '{}': {} values given for shape {} ({} elements)",
               name, values.size(), format_shape(shape), n);
  TensorToWrite t{std::move(name), DType::kF32, std::move(shape), {}, "I64"};
  t.bytes.resize(values.size() * sizeof(int64_t));
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());  // little-endian, as the format
  return t;
}

TensorToWrite make_bool_tensor(std::string name, std::vector<int64_t> shape, std::span<const uint8_t> values) {
  const int64_t n = checked_num_elements(name, shape);
  DSPARK_CHECK(static_cast<int64_t>(values.size()) == n, "tensor '{}': {} values given for shape {} ({} elements)",
               name, values.size(), format_shape(shape), n);
  for (size_t i = 0; i < values.size(); ++i)
    DSPARK_CHECK(values[i] <= 1, "tensor '{}': BOOL element {} is {}, not 0 or 1", name, i, values[i]);
  TensorToWrite t{std::move(name), DType::kF32, std::move(shape), {}, "BOOL"};
  t.bytes.resize(values.size());
  std::memcpy(t.bytes.data(), values.data(), values.size());
  return t;
}

void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const std::string file = path.string();
  json header = json::object();
  std::set<std::string_view> seen;
  uint64_t offset = 0;
  for (const TensorToWrite& t : tensors) {
    DSPARK_CHECK(!t.name.empty() && t.name != "__metadata__",
                 "{}: invalid tensor name '{}'", file, t.name);
    DSPARK_CHECK(seen.insert(t.name).second, "{}: tensor '{}' appears twice", file, t.name);
    const int64_t n = checked_num_elements(t.name, t.shape);
    const std::string tag(t.dtype_tag.empty() ? safetensors_dtype_tag(t.dtype) : t.dtype_tag);
    const size_t element_size = t.dtype_tag.empty() ? dtype_size(t.dtype) : safetensors_tag_size(t.dtype_tag);
    const uint64_t expected = static_cast<uint64_t>(n) * element_size;
    DSPARK_CHECK(t.bytes.size() == expected,
                 "{}: tensor '{}' has {} bytes, but shape {} of {} needs {}", file, t.name,
                 t.bytes.size(), format_shape(t.shape), tag, expected);
    header[t.name] = {{"dtype", tag},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + expected}}};
    offset += expected;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;

  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception& e) {
    DSPARK_FAIL("{}: cannot encode the header (names must be UTF-8): {}", file, e.what());
  }
  // Padding keeps the data 8-aligned when the file is mapped.
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t header_size = text.size();

  std::filesystem::path tmp = path;
  static std::atomic<uint64_t> counter{0};  // distinct names for concurrent writers
  tmp += fmt::format(".tmp.{}.{}", ::getpid(), counter.fetch_add(1));
  TempFile out(tmp);
  out.write(&header_size, 8);  // little-endian on every supported machine
  out.write(text.data(), text.size());
  for (const TensorToWrite& t : tensors) out.write(t.bytes.data(), t.bytes.size());
  out.commit(path);
}

}  // namespace dspark
