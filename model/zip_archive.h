#pragma once
// A zip file's entries, read on mmap and validated: PyTorch's checkpoint format (torch.save since 1.6)
// is a zip archive of stored, uncompressed entries (APPNOTE.TXT, PKWARE's zip specification). Every
// offset and size the file declares is checked against the file before a byte is read; zip64 records
// are read where the sizes need them. Only stored entries: torch.save writes no other kind.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "model/mapped_file.h"

namespace lenscheck {

struct ZipEntry {
  std::string name;
  uint64_t offset = 0;  // of its data in the file
  uint64_t size = 0;
};

class ZipArchive {
 public:
  // Maps the file and validates the end records, the central directory, every local header, that no
  // two entries overlap, and every entry's CRC-32; throws InputError naming the file and the problem.
  static ZipArchive open(const std::filesystem::path& file);

  const std::filesystem::path& path() const { return path_; }
  const std::vector<ZipEntry>& entries() const { return entries_; }  // in the central directory's order
  const ZipEntry* find(const std::string& name) const;
  std::span<const std::byte> data(const ZipEntry& entry) const;  // entry: one of entries()

 private:
  std::span<const std::byte> data_at(const ZipEntry& entry) const;

  std::filesystem::path path_;
  MappedFile file_;
  std::vector<ZipEntry> entries_;
  std::map<std::string, size_t> index_;  // name -> position in entries_, for find()
};

// The CRC-32 zip records of each entry (ISO-HDLC: polynomial 0xEDB88320 reflected, as zlib's crc32).
uint32_t zip_crc32(std::span<const std::byte> bytes);

}  // namespace lenscheck
