#pragma once
// The safetensors format, read on mmap and validated, and written: checkpoints and traces both use it.
// Layout: 8-byte little-endian header length N, N bytes of JSON header, then the raw little-endian data.
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "model/mapped_file.h"

namespace lenscheck {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL };

const char* dtype_name(DType dtype);
size_t dtype_size(DType dtype);
bool is_floating(DType dtype);  // F64, F32, F16, BF16
// One stored little-endian element of a floating dtype at p (unaligned), exactly as a double: F16 and
// BF16 by their bits, subnormals and NaN payloads included. The one conversion every reader uses.
double floating_element(DType dtype, const std::byte* p);

// "[2, 3]": how every message prints a shape.
std::string shape_string(const std::vector<int64_t>& shape);

struct TensorEntry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets into the data section
  uint64_t end = 0;
  uint64_t numel() const;
};

class SafetensorsFile {
 public:
  // Maps and validates the whole file; throws InputError naming the file and the problem.
  static SafetensorsFile open(const std::filesystem::path& file);

  const std::filesystem::path& path() const { return path_; }
  const std::vector<TensorEntry>& entries() const { return entries_; }  // in data order
  const TensorEntry* find(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // Converting reads: floating dtypes to float/double (F16/BF16/F64 converted), I64/I32 to int64.
  std::vector<float> read_f32(const TensorEntry& entry) const;
  std::vector<double> read_f64(const TensorEntry& entry) const;
  std::vector<int64_t> read_i64(const TensorEntry& entry) const;

 private:
  std::filesystem::path path_;
  MappedFile file_;
  std::span<const std::byte> data_;
  std::vector<TensorEntry> entries_;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, size_t> index_;  // name -> position in entries_, for find()
};

struct OutputTensor {
  std::string name;
  DType dtype;  // F64, F32 or I64
  std::vector<int64_t> shape;
  std::vector<double> values;  // F64/F32: rounded to the dtype on write; I64: integral values
};

void write_safetensors(const std::filesystem::path& file, const std::vector<OutputTensor>& tensors,
                       const std::map<std::string, std::string>& metadata);

}  // namespace lenscheck
