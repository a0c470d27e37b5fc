#pragma once
// A file mapped read-only, for the loaders of binary formats (safetensors, zip): they read it in place
// and check every offset they take from it against its size.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>

namespace lenscheck {

class MappedFile {
 public:
  // Throws InputError naming the file: it cannot be opened, is not a regular file, or cannot be mapped.
  static MappedFile open(const std::filesystem::path& file);

  std::span<const std::byte> bytes() const { return bytes_; }

 private:
  std::shared_ptr<const void> mapping_;  // shared: copies of a loader share one mapping
  std::span<const std::byte> bytes_;
};

}  // namespace lenscheck
