// Safetensors reading (memory-mapped, single file or sharded through
// model.safetensors.index.json) and writing.
//
// Format: 8-byte little-endian header length N, N bytes of JSON header
// {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}, then the data;
// offsets are relative to the start of the data.
// Every structural problem (short file, header past the end, bad JSON, offsets outside the
// data, begin > end or overlapping, byte count != shape x dtype size, a dtype name that is
// not a safetensors dtype) fails when the file is opened, with an Error naming the file and
// the tensor. Tensors of valid safetensors dtypes the engine does not compute in (I64, F64,
// BOOL, ...) are validated and listed, but asking for one (get, load_f32) is an Error naming
// the tensor and its dtype: checkpoints may carry such buffers next to the weights.
// Data is not copied: a TensorInfo's bytes point into the mapping, which lives as long as
// its SafetensorsFile / WeightStore. Those bytes need not be aligned to the element size.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/mmap_file.h"

namespace dspark {

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;          // meaningful only when supported
  std::string dtype_tag;              // as written in the header: "BF16", "I64", ...
  bool supported = true;              // false: a dtype the engine cannot convert
  std::vector<int64_t> shape;
  std::span<const std::byte> bytes;   // [num_elements * element size], points into the mapping
  std::filesystem::path file;         // for error messages
  int64_t num_elements() const;
};

class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::filesystem::path& path);
  const std::filesystem::path& path() const { return file_.path(); }
  // Every tensor of the file, supported dtype or not.
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  MappedFile file_;
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// All tensors of a model directory (model.safetensors, or the shards listed in
// model.safetensors.index.json; a lone *.safetensors file is accepted too).
class WeightStore {
 public:
  // model_dir may also be a single .safetensors file.
  explicit WeightStore(const std::filesystem::path& model_dir);

  bool contains(const std::string& name) const;
  // Throws naming the directory and tensor when absent.
  const TensorInfo& get(const std::string& name) const;
  // Like get, for any dtype (also ones the engine cannot load).
  const TensorInfo& find(const std::string& name) const;
  // Checks the shape (Error names file, tensor, expected and actual shape) and converts to f32.
  std::vector<float> load_f32(const std::string& name, std::span<const int64_t> expected_shape) const;
  // The same into caller-owned memory of exactly num_elements floats (e.g. an AlignedBuffer).
  void load_f32_into(const std::string& name, std::span<const int64_t> expected_shape,
                     std::span<float> out) const;
  // An I8 tensor (a quantized weight) with its shape checked; any other dtype is an Error.
  std::vector<int8_t> load_i8(const std::string& name, std::span<const int64_t> expected_shape) const;
  std::vector<std::string> names() const;  // sorted
  size_t num_files() const { return files_.size(); }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorInfo*> index_;
};

// "[a, b]": shapes as they appear in error messages.
std::string format_shape(std::span<const int64_t> shape);
// The header's name of a dtype: "F32", "BF16", "F16", "F8_E4M3", "I8".
std::string_view safetensors_dtype_tag(DType dtype);
// Bytes per element of any safetensors dtype tag ("I64": 8, "BOOL": 1, ...); throws for a
// tag that is not a safetensors dtype.
size_t safetensors_tag_size(std::string_view tag);

// One tensor to write: raw little-endian bytes of the given dtype and shape. dtype_tag,
// when non-empty, names a stored-only dtype the engine does not compute in ("I64", "BOOL":
// index buffers such as an EAGLE-3 drafter's d2t / t2d) and replaces dtype.
struct TensorToWrite {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;
  std::string dtype_tag{};
};

TensorToWrite make_f32_tensor(std::string name, std::vector<int64_t> shape, std::span<const float> values);
// Rounds to nearest even.
TensorToWrite make_bf16_tensor(std::string name, std::vector<int64_t> shape, std::span<const float> values);
TensorToWrite make_f16_tensor(std::string name, std::vector<int64_t> shape, std::span<const float> values);
TensorToWrite make_i8_tensor(std::string name, std::vector<int64_t> shape, std::span<const int8_t> values);
// Stored-only dtypes: I64, and BOOL (one byte per element, values must be 0 or 1).
TensorToWrite make_i64_tensor(std::string name, std::vector<int64_t> shape, std::span<const int64_t> values);
TensorToWrite make_bool_tensor(std::string name, std::vector<int64_t> shape, std::span<const uint8_t> values);

// Writes atomically (temp file + rename). Tensors are laid out in the order given, back to
// back (the format allows no holes); the header is padded with spaces to a multiple of 8
// bytes so the data starts 8-aligned. Throws when a tensor's byte count does not match its
// shape and dtype, or a name is empty, repeated or "__metadata__".
void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace dspark
