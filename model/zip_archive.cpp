#include "model/zip_archive.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "model/error.h"

namespace lenscheck {

static_assert(std::endian::native == std::endian::little, "the zip reader assumes a little-endian host");

namespace {

// Signatures and fixed sizes of the records (APPNOTE.TXT 4.3).
constexpr uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50, kEnd = 0x06054b50,
                   kZip64End = 0x06064b50, kZip64Locator = 0x07064b50;
constexpr uint64_t kLocalHeaderSize = 30, kCentralHeaderSize = 46, kEndSize = 22, kZip64EndSize = 56,
                   kZip64LocatorSize = 20;
constexpr uint64_t kMaxCommentSize = 0xffff;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint16_t kEncrypted = 0x0001, kStrongEncryption = 0x0040;  // general purpose flag bits
constexpr uint32_t kSentinel32 = 0xffffffff;                          // "see the zip64 record"

// Whether `length` bytes from `offset` lie before `limit`, without overflow.
bool fits(uint64_t limit, uint64_t offset, uint64_t length) { return offset <= limit && length <= limit - offset; }

std::string zip_entry(const std::string& name) { return "zip entry '" + name + "'"; }

// A little-endian field of the file; every caller has checked that it lies inside.
class Fields {
 public:
  explicit Fields(std::span<const std::byte> bytes) : bytes_(bytes) {}
  uint16_t u16(uint64_t at) const { return load<uint16_t>(at); }
  uint32_t u32(uint64_t at) const { return load<uint32_t>(at); }
  uint64_t u64(uint64_t at) const { return load<uint64_t>(at); }
  std::string text(uint64_t at, uint64_t length) const {
    return std::string(reinterpret_cast<const char*>(bytes_.data() + at), length);
  }

 private:
  template <typename T>
  T load(uint64_t at) const {
    if (!fits(bytes_.size(), at, sizeof(T))) throw std::logic_error("zip field read outside the file");
    T v;
    std::memcpy(&v, bytes_.data() + at, sizeof v);
    return v;
  }
  std::span<const std::byte> bytes_;
};

// Where the central directory lies, and where the end records after it begin.
struct Directory {
  uint64_t count = 0, offset = 0, size = 0;
  uint64_t end_records = 0;
};

// The zip64 end record, which the locator just before the end record points to; its values replace
// the end record's, which must be either the same or the "see zip64" sentinel.
void read_zip64_end(const std::filesystem::path& file, const Fields& f, uint64_t end, Directory& d) {
  const uint64_t locator = end - kZip64LocatorSize;
  const uint64_t record = f.u64(locator + 8);
  if (f.u32(locator + 4) != 0 || f.u32(locator + 16) != 1)
    throw InputError(file, "zip archive spans several disks; lenscheck reads single-file archives only");
  if (!fits(locator, record, kZip64EndSize) || f.u32(record) != kZip64End)
    throw InputError(file, fmt::format("zip64 locator points to offset {}, where no zip64 end of central "
                                       "directory record lies before it", record));
  if (f.u32(record + 16) != 0 || f.u32(record + 20) != 0 || f.u64(record + 24) != f.u64(record + 32))
    throw InputError(file, "zip archive spans several disks; lenscheck reads single-file archives only");
  const Directory zip64{f.u64(record + 32), f.u64(record + 48), f.u64(record + 40), record};
  const bool agree = (d.count == 0xffff || d.count == zip64.count) &&
                     (d.offset == kSentinel32 || d.offset == zip64.offset) &&
                     (d.size == kSentinel32 || d.size == zip64.size);
  if (!agree)
    throw InputError(file, fmt::format("end of central directory record ({} entries, {} bytes at offset {}) "
                                       "disagrees with the zip64 record ({} entries, {} bytes at offset {})",
                                       d.count, d.size, d.offset, zip64.count, zip64.size, zip64.offset));
  d = zip64;
}

// The end of central directory record: the file's last 22 bytes, or earlier by its comment.
Directory read_end_records(const std::filesystem::path& file, const Fields& f, uint64_t size) {
  if (size < kEndSize)
    throw InputError(file, fmt::format("is not a zip archive: {} bytes, fewer than its end record's 22", size));
  uint64_t end = size;
  for (uint64_t comment = 0; comment <= kMaxCommentSize && comment <= size - kEndSize; ++comment) {
    const uint64_t at = size - kEndSize - comment;
    if (f.u32(at) == kEnd && f.u16(at + 20) == comment) {
      end = at;
      break;
    }
  }
  if (end == size)
    throw InputError(file, "is not a zip archive: it has no end of central directory record (truncated?)");
  if (f.u16(end + 4) != 0 || f.u16(end + 6) != 0 || f.u16(end + 8) != f.u16(end + 10))
    throw InputError(file, "zip archive spans several disks; lenscheck reads single-file archives only");
  Directory d{f.u16(end + 10), f.u32(end + 16), f.u32(end + 12), end};
  if (end >= kZip64LocatorSize && f.u32(end - kZip64LocatorSize) == kZip64Locator) read_zip64_end(file, f, end, d);
  if (!fits(d.end_records, d.offset, d.size))
    throw InputError(file, fmt::format("central directory ({} bytes at offset {}) does not lie before the end "
                                       "records at offset {}", d.size, d.offset, d.end_records));
  if (d.count > d.size / kCentralHeaderSize)
    throw InputError(file, fmt::format("central directory of {} bytes cannot hold the {} entries it declares",
                                       d.size, d.count));
  return d;
}

// One central directory record, with the zip64 extra field's values where its own are sentinels.
struct CentralRecord {
  std::string name;
  uint16_t flags = 0, method = 0;
  uint32_t crc = 0;
  uint64_t compressed = 0, uncompressed = 0, local_header = 0;
  uint64_t length = 0;  // of the record, name, extra field and comment included
};

void apply_zip64_extra(const std::filesystem::path& file, const Fields& f, uint64_t extra, uint64_t extra_size,
                       CentralRecord& r) {
  for (uint64_t at = 0; at + 4 <= extra_size;) {
    const uint16_t id = f.u16(extra + at), size = f.u16(extra + at + 2);
    if (!fits(extra_size, at + 4, size))
      throw InputError(file, zip_entry(r.name) + fmt::format(": extra field {:#06x} runs past the record", id));
    if (id == kZip64ExtraId) {
      // Only the fields whose 32-bit value is the sentinel are present, in this order (APPNOTE 4.5.3).
      uint64_t field = extra + at + 4;
      const uint64_t field_end = field + size;
      for (auto [value, what] : {std::pair{&r.uncompressed, "uncompressed size"},
                                 std::pair{&r.compressed, "compressed size"},
                                 std::pair{&r.local_header, "local header offset"}}) {
        if (*value != kSentinel32) continue;
        if (!fits(field_end, field, 8))
          throw InputError(file, zip_entry(r.name) + ": its zip64 extra field lacks the " + what);
        *value = f.u64(field);
        field += 8;
      }
    }
    at += 4 + size;
  }
}

// The central directory record at `at`, which must end by `end`.
CentralRecord read_central_record(const std::filesystem::path& file, const Fields& f, uint64_t at, uint64_t end,
                                  uint64_t ordinal) {
  if (!fits(end, at, kCentralHeaderSize) || f.u32(at) != kCentralHeader)
    throw InputError(file, fmt::format("central directory entry {} (at offset {}) is not a central directory "
                                       "record", ordinal, at));
  const uint64_t name_size = f.u16(at + 28), extra_size = f.u16(at + 30), comment_size = f.u16(at + 32);
  if (!fits(end, at + kCentralHeaderSize, name_size + extra_size + comment_size))
    throw InputError(file, fmt::format("central directory entry {} runs past the central directory", ordinal));
  CentralRecord r;
  r.name = f.text(at + kCentralHeaderSize, name_size);
  r.flags = f.u16(at + 8);
  r.method = f.u16(at + 10);
  r.crc = f.u32(at + 16);
  r.compressed = f.u32(at + 20);
  r.uncompressed = f.u32(at + 24);
  r.local_header = f.u32(at + 42);
  r.length = kCentralHeaderSize + name_size + extra_size + comment_size;
  apply_zip64_extra(file, f, at + kCentralHeaderSize + name_size, extra_size, r);
  const std::string entry = zip_entry(r.name);
  if (r.flags & (kEncrypted | kStrongEncryption)) throw InputError(file, entry + " is encrypted");
  if (r.method != 0)
    throw InputError(file, fmt::format("{} is compressed (method {}{}); lenscheck reads stored entries only, "
                                       "as torch.save writes them", entry, r.method, r.method == 8 ? ", deflate" : ""));
  if (r.compressed != r.uncompressed)
    throw InputError(file, fmt::format("{} is stored, yet declares {} bytes compressed and {} uncompressed", entry,
                                       r.compressed, r.uncompressed));
  return r;
}

// Where the entry's data lies, from its local header, which must lie before the central directory.
ZipEntry locate_data(const std::filesystem::path& file, const Fields& f, const CentralRecord& r,
                     uint64_t directory) {
  const std::string entry = zip_entry(r.name);
  const uint64_t at = r.local_header;
  if (!fits(directory, at, kLocalHeaderSize) || f.u32(at) != kLocalHeader)
    throw InputError(file, fmt::format("{}: no local header at offset {}, before the central directory at {}",
                                       entry, at, directory));
  const uint64_t name_size = f.u16(at + 26), extra_size = f.u16(at + 28);
  if (!fits(directory, at + kLocalHeaderSize, name_size + extra_size))
    throw InputError(file, entry + ": its local header runs into the central directory");
  if (f.text(at + kLocalHeaderSize, name_size) != r.name || f.u16(at + 8) != r.method)
    throw InputError(file, fmt::format("{}: the local header at offset {} disagrees with the central directory "
                                       "(it names {})", entry, at, "'" + f.text(at + kLocalHeaderSize, name_size) + "'"));
  const ZipEntry e{r.name, at + kLocalHeaderSize + name_size + extra_size, r.uncompressed};
  if (!fits(directory, e.offset, e.size))
    throw InputError(file, fmt::format("{}: its {} bytes at offset {} run past the central directory at {}", entry,
                                       e.size, e.offset, directory));
  return e;
}

constexpr std::array<uint32_t, 256> kCrcTable = [] {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}();

}  // namespace

uint32_t zip_crc32(std::span<const std::byte> bytes) {
  uint32_t c = 0xffffffffu;
  for (std::byte b : bytes) c = kCrcTable[(c ^ static_cast<uint8_t>(b)) & 0xffu] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

ZipArchive ZipArchive::open(const std::filesystem::path& file) {
  ZipArchive zip;
  zip.path_ = file;
  zip.file_ = MappedFile::open(file);
  const Fields f(zip.file_.bytes());
  const Directory d = read_end_records(file, f, zip.file_.bytes().size());

  struct Extent {
    uint64_t begin, end;  // the local header's start, the data's end
    size_t entry;
  };
  std::vector<Extent> extents;
  uint64_t at = d.offset;
  for (uint64_t i = 0; i < d.count; ++i) {
    const CentralRecord r = read_central_record(file, f, at, d.offset + d.size, i);
    at += r.length;
    ZipEntry e = locate_data(file, f, r, d.offset);
    if (const uint32_t crc = zip_crc32(zip.data_at(e)); crc != r.crc)
      throw InputError(file, zip_entry(e.name) + fmt::format(": its data's CRC-32 is {:08x}, the central directory "
                                                           "says {:08x} (the file is corrupt)", crc, r.crc));
    if (!zip.index_.emplace(e.name, zip.entries_.size()).second)
      throw InputError(file, zip_entry(e.name) + " appears twice");
    extents.push_back({r.local_header, e.offset + e.size, zip.entries_.size()});
    zip.entries_.push_back(std::move(e));
  }
  if (at != d.offset + d.size)
    throw InputError(file, fmt::format("central directory holds {} bytes after its {} entries",
                                       d.offset + d.size - at, d.count));
  // Entries sharing bytes would let one name read another's data.
  std::sort(extents.begin(), extents.end(), [](const Extent& a, const Extent& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < extents.size(); ++i)
    if (extents[i].begin < extents[i - 1].end)
      throw InputError(file, fmt::format("zip entries '{}' and '{}' overlap", zip.entries_[extents[i - 1].entry].name,
                                         zip.entries_[extents[i].entry].name));
  return zip;
}

const ZipEntry* ZipArchive::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

std::span<const std::byte> ZipArchive::data(const ZipEntry& entry) const {
  if (entries_.empty() || &entry < entries_.data() || &entry >= entries_.data() + entries_.size())
    throw std::out_of_range("zip entry '" + entry.name + "' does not belong to " + path_.string());
  return data_at(entry);
}

std::span<const std::byte> ZipArchive::data_at(const ZipEntry& entry) const {
  return file_.bytes().subspan(entry.offset, entry.size);
}

}  // namespace lenscheck
