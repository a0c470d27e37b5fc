#pragma once
// torch.save's layout written byte by byte, for the tests and the torch_archive fuzzer: a zip archive of
// stored entries (with or without zip64 records) and the pickle opcodes of a state dict, so that a test
// can write any lie, global or opcode into an otherwise well-formed archive.
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "model/zip_archive.h"

namespace lenscheck::test {

inline void append_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}

// Stored entries, each a local header and its data, then the central directory and the end records.
// `zip64` writes every size and offset in zip64 extra fields and a zip64 end record, their 32-bit
// fields the sentinel, as a writer must past 4 GiB.
inline std::string zip_of(const std::vector<std::pair<std::string, std::string>>& entries, bool zip64 = false) {
  std::string out, central;
  for (const auto& [name, data] : entries) {
    const uint32_t crc = zip_crc32(std::as_bytes(std::span(data.data(), data.size())));
    const uint64_t offset = out.size();
    append_le(out, 0x04034b50, 4);
    append_le(out, 20, 2);  // version needed
    append_le(out, 0, 2);   // flags
    append_le(out, 0, 2);   // method: stored
    append_le(out, 0, 4);   // time, date
    append_le(out, crc, 4);
    append_le(out, data.size(), 4);
    append_le(out, data.size(), 4);
    append_le(out, name.size(), 2);
    append_le(out, 0, 2);  // extra field length
    out += name + data;

    append_le(central, 0x02014b50, 4);
    append_le(central, 45, 2);  // version made by
    append_le(central, 45, 2);  // version needed
    append_le(central, 0, 2);
    append_le(central, 0, 2);
    append_le(central, 0, 4);
    append_le(central, crc, 4);
    append_le(central, zip64 ? 0xffffffff : data.size(), 4);
    append_le(central, zip64 ? 0xffffffff : data.size(), 4);
    append_le(central, name.size(), 2);
    append_le(central, zip64 ? 28 : 0, 2);
    append_le(central, 0, 2);  // comment length
    append_le(central, 0, 2);  // disk
    append_le(central, 0, 2);  // internal attributes
    append_le(central, 0, 4);  // external attributes
    append_le(central, zip64 ? 0xffffffff : offset, 4);
    central += name;
    if (zip64) {
      append_le(central, 0x0001, 2);
      append_le(central, 24, 2);
      append_le(central, data.size(), 8);
      append_le(central, data.size(), 8);
      append_le(central, offset, 8);
    }
  }
  const uint64_t directory = out.size();
  out += central;
  if (zip64) {
    const uint64_t record = out.size();
    append_le(out, 0x06064b50, 4);
    append_le(out, 44, 8);  // the record's size after this field
    append_le(out, 45, 2);
    append_le(out, 45, 2);
    append_le(out, 0, 4);
    append_le(out, 0, 4);
    append_le(out, entries.size(), 8);
    append_le(out, entries.size(), 8);
    append_le(out, central.size(), 8);
    append_le(out, directory, 8);
    append_le(out, 0x07064b50, 4);  // the locator
    append_le(out, 0, 4);
    append_le(out, record, 8);
    append_le(out, 1, 4);
  }
  append_le(out, 0x06054b50, 4);
  append_le(out, 0, 2);
  append_le(out, 0, 2);
  append_le(out, zip64 ? 0xffff : entries.size(), 2);
  append_le(out, zip64 ? 0xffff : entries.size(), 2);
  append_le(out, zip64 ? 0xffffffff : central.size(), 4);
  append_le(out, zip64 ? 0xffffffff : directory, 4);
  append_le(out, 0, 2);
  return out;
}

// Pickle opcodes, protocol 2, as torch.save emits them.
class Pickle {
 public:
  Pickle() { bytes_ = "\x80\x02"; }  // PROTO 2
  Pickle& op(const std::string& opcodes) { return raw(opcodes); }
  Pickle& raw(const std::string& bytes) {
    bytes_ += bytes;
    return *this;
  }
  Pickle& global(const std::string& module, const std::string& name) { return raw("c" + module + "\n" + name + "\n"); }
  Pickle& str(const std::string& s) {
    bytes_ += 'X';
    append_le(bytes_, s.size(), 4);
    return raw(s);
  }
  Pickle& integer(int32_t i) {
    bytes_ += 'J';
    append_le(bytes_, static_cast<uint32_t>(i), 4);
    return *this;
  }
  Pickle& ints(const std::vector<int64_t>& values) {  // a tuple of them
    op("(");
    for (int64_t v : values) integer(static_cast<int32_t>(v));
    return op("t");
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

// One tensor of a state dict: a view of the storage `key` (element count `numel`, type e.g. FloatStorage).
struct TensorView {
  std::string name, storage_type, key;
  int64_t numel, offset;
  std::vector<int64_t> shape, stride;
};

// The pickle of an OrderedDict of these views, opcode for opcode as torch.save writes one.
inline Pickle state_dict_pickle(const std::vector<TensorView>& views) {
  Pickle p;
  p.global("collections", "OrderedDict").op(")R(");
  for (const TensorView& v : views) {
    p.str(v.name).global("torch._utils", "_rebuild_tensor_v2").op("((");
    p.str("storage").global("torch", v.storage_type).str(v.key).str("cpu").integer(static_cast<int32_t>(v.numel));
    p.op("tQ").integer(static_cast<int32_t>(v.offset)).ints(v.shape).ints(v.stride);
    p.op("\x89").global("collections", "OrderedDict").op(")Rt").op("R");  // requires_grad False, no hooks
  }
  return p.op("u.");
}

// torch.save's archive: <archive>/data.pkl, <archive>/data/<key> per storage, version and byteorder.
inline std::string torch_archive_of(const std::string& pickle,
                                    const std::vector<std::pair<std::string, std::string>>& storages,
                                    bool zip64 = false) {
  std::vector<std::pair<std::string, std::string>> entries{{"archive/data.pkl", pickle}};
  for (const auto& [key, bytes] : storages) entries.emplace_back("archive/data/" + key, bytes);
  entries.emplace_back("archive/version", "3\n");
  entries.emplace_back("archive/byteorder", "little");
  return zip_of(entries, zip64);
}

}  // namespace lenscheck::test
