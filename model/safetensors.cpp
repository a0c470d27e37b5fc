#include "model/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/error.h"
#include "model/mapped_file.h"

namespace lenscheck {

std::string shape_string(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// The format is little-endian and we memcpy raw bytes into host values.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {

using ordered_json = nlohmann::ordered_json;  // keeps header order: it breaks ties between empty tensors

constexpr uint64_t kMaxHeaderBytes = 100'000'000;

constexpr DType kAllDTypes[] = {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64,
                                DType::I32, DType::I16, DType::I8,  DType::U8,   DType::BOOL};

bool parse_dtype(const std::string& name, DType& out) {
  for (DType d : kAllDTypes) {
    if (name == dtype_name(d)) {
      out = d;
      return true;
    }
  }
  return false;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// Element count of a shape, or false on overflow: the header is untrusted.
bool checked_numel(const std::vector<int64_t>& shape, uint64_t& out) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return false;
  }
  out = n;
  return true;
}

// nlohmann's parser keeps the last of duplicate keys silently, so a parser callback watches every
// object's keys. A duplicate is ambiguous input: which tensor did the writer mean?
class DuplicateKeyGuard {
 public:
  explicit DuplicateKeyGuard(const std::filesystem::path& file) : file_(file) {}

  bool operator()(int /*depth*/, ordered_json::parse_event_t event, ordered_json& parsed) {
    using E = ordered_json::parse_event_t;
    if (event == E::object_start) {
      frames_.push_back({{}, frames_.empty() ? std::string() : frames_.back().last_key,
                         frames_.size()});
    } else if (event == E::object_end) {
      frames_.pop_back();
    } else if (event == E::key) {
      Frame& f = frames_.back();
      f.last_key = parsed.get<std::string>();
      if (!f.keys.insert(f.last_key).second) throw InputError(file_, describe(f));
    }
    return true;
  }

 private:
  struct Frame {
    std::set<std::string> keys;
    std::string name;  // the key under which this object sits in its parent
    size_t depth;      // 0 for the header object itself
    std::string last_key = {};
  };

  static std::string describe(const Frame& f) {
    if (f.depth == 0) return "duplicate tensor name " + quoted(f.last_key) + " in header";
    if (f.depth == 1 && f.name == "__metadata__") return "duplicate __metadata__ key " + quoted(f.last_key);
    return "duplicate key " + quoted(f.last_key) + " in header entry " + quoted(f.name);
  }

  std::filesystem::path file_;
  std::vector<Frame> frames_;
};

std::map<std::string, std::string> parse_metadata(const std::filesystem::path& file, const ordered_json& j) {
  if (!j.is_object()) throw InputError(file, "__metadata__ is not a JSON object");
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : j.items()) {
    if (!value.is_string()) throw InputError(file, "__metadata__ value of " + quoted(key) + " is not a string");
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

TensorEntry parse_entry(const std::filesystem::path& file, const std::string& name, const ordered_json& j) {
  const std::string t = "tensor " + quoted(name);
  if (!j.is_object()) throw InputError(file, t + ": header entry is not a JSON object");
  for (const auto& [key, value] : j.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      throw InputError(file, t + ": unexpected key " + quoted(key));
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!j.contains(key)) throw InputError(file, t + ": missing " + quoted(key));
  }

  TensorEntry e;
  e.name = name;
  const ordered_json& dtype = j["dtype"];
  if (!dtype.is_string()) throw InputError(file, t + ": dtype is not a string");
  if (!parse_dtype(dtype.get<std::string>(), e.dtype))
    throw InputError(file, t + ": unknown dtype " + quoted(dtype.get<std::string>()));

  // is_number_unsigned: nlohmann parses non-negative integer literals (and only those) as unsigned.
  const ordered_json& shape = j["shape"];
  if (!shape.is_array()) throw InputError(file, t + ": shape is not an array");
  for (const ordered_json& d : shape) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      throw InputError(file, t + ": shape " + d.dump() + " is not a non-negative integer");
    e.shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
  }

  const ordered_json& offsets = j["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned())
    throw InputError(file, t + ": data_offsets is not an array of 2 non-negative integers");
  e.begin = offsets[0].get<uint64_t>();
  e.end = offsets[1].get<uint64_t>();
  if (e.begin > e.end) throw InputError(file, t + ": data_offsets begin " + std::to_string(e.begin) +
                                                  " is after end " + std::to_string(e.end));

  uint64_t numel = 0, bytes = 0;
  if (!checked_numel(e.shape, numel) || __builtin_mul_overflow(numel, dtype_size(e.dtype), &bytes))
    throw InputError(file, t + ": shape " + shape_string(e.shape) + " overflows the byte count");
  if (bytes != e.end - e.begin)
    throw InputError(file, t + ": shape " + shape_string(e.shape) + " of " + dtype_name(e.dtype) + " needs " +
                               std::to_string(bytes) + " bytes but data_offsets span " +
                               std::to_string(e.end - e.begin));
  return e;
}

// F16 -> F32 by bit manipulation: exact for every half, subnormals and NaN payloads included.
float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf or nan
  } else if (exp != 0) {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;  // +-0
  } else {
    // Subnormal half: normalise the mantissa; every half subnormal is a normal float.
    int e = -1;
    do {
      mant <<= 1;
      ++e;
    } while ((mant & 0x400u) == 0);
    bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

float bf16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

template <typename T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // the data section need not be aligned
  return v;
}

template <typename Out>
std::vector<Out> read_floating(const std::filesystem::path& file, std::span<const std::byte> data,
                               const TensorEntry& e) {
  if (e.begin > e.end || e.end > data.size() || e.numel() * dtype_size(e.dtype) != e.end - e.begin)
    throw std::out_of_range("tensor '" + e.name + "' does not belong to " + file.string());
  if (!is_floating(e.dtype))
    throw InputError(file, "tensor " + quoted(e.name) + " has integer dtype " + dtype_name(e.dtype) +
                               ", expected a floating dtype");
  const std::byte* p = data.data() + e.begin;
  const size_t n = e.numel(), step = dtype_size(e.dtype);
  std::vector<Out> out(n);
  for (size_t i = 0; i < n; ++i, p += step) out[i] = static_cast<Out>(floating_element(e.dtype, p));
  return out;
}

// Writes all of buf or throws: write(2) may write less than asked.
void write_all(int fd, const std::filesystem::path& file, const void* buf, size_t size) {
  const char* p = static_cast<const char*>(buf);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw InputError(file, std::string("write failed: ") + (n < 0 ? std::strerror(errno) : "short write"));
    p += n;
    size -= static_cast<size_t>(n);
  }
}

// Converts one tensor's values to its on-disk bytes.
std::vector<char> encode(const OutputTensor& t) {
  std::vector<char> bytes(t.values.size() * dtype_size(t.dtype));
  char* p = bytes.data();
  for (double v : t.values) {
    if (t.dtype == DType::F64) {
      std::memcpy(p, &v, 8);
      p += 8;
    } else if (t.dtype == DType::F32) {
      float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      p += 4;
    } else {
      int64_t i = static_cast<int64_t>(v);  // range and integrality checked by the caller
      std::memcpy(p, &i, 8);
      p += 8;
    }
  }
  return bytes;
}

void check_output(const OutputTensor& t, std::set<std::string>& names) {
  const std::string what = "write_safetensors: tensor '" + t.name + "'";
  if (t.name == "__metadata__" || !names.insert(t.name).second)
    throw std::invalid_argument(what + ": name is reserved or repeated");
  if (t.dtype != DType::F64 && t.dtype != DType::F32 && t.dtype != DType::I64)
    throw std::invalid_argument(what + ": dtype " + dtype_name(t.dtype) + " cannot be written");
  uint64_t numel = 0;
  bool negative = std::any_of(t.shape.begin(), t.shape.end(), [](int64_t d) { return d < 0; });
  if (negative || !checked_numel(t.shape, numel) || numel != t.values.size())
    throw std::invalid_argument(what + ": shape " + shape_string(t.shape) + " does not match " +
                                std::to_string(t.values.size()) + " values");
  if (t.dtype == DType::I64) {
    for (double v : t.values) {
      // [-2^63, 2^63): the doubles that convert to int64 without undefined behaviour.
      if (std::trunc(v) != v || v < -0x1p63 || v >= 0x1p63)
        throw std::invalid_argument(what + ": I64 value " + std::to_string(v) + " is not an int64");
    }
  }
}

}  // namespace

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F64: return "F64";
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I64: return "I64";
    case DType::I32: return "I32";
    case DType::I16: return "I16";
    case DType::I8: return "I8";
    case DType::U8: return "U8";
    case DType::BOOL: return "BOOL";
  }
  return "?";
}

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F64:
    case DType::I64: return 8;
    case DType::F32:
    case DType::I32: return 4;
    case DType::F16:
    case DType::BF16:
    case DType::I16: return 2;
    case DType::I8:
    case DType::U8:
    case DType::BOOL: return 1;
  }
  return 0;
}

bool is_floating(DType dtype) {
  return dtype == DType::F64 || dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
}

double floating_element(DType dtype, const std::byte* p) {
  switch (dtype) {
    case DType::F64: return load<double>(p);
    case DType::F32: return load<float>(p);
    case DType::F16: return half_to_float(load<uint16_t>(p));
    case DType::BF16: return bf16_to_float(load<uint16_t>(p));
    default: throw std::invalid_argument(std::string("floating_element: ") + dtype_name(dtype) + " is not floating");
  }
}

uint64_t TensorEntry::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& file) {
  SafetensorsFile st;
  st.path_ = file;
  st.file_ = MappedFile::open(file);
  const uint64_t size = st.file_.bytes().size();
  if (size < 8) throw InputError(file, "file is shorter than 8 bytes (" + std::to_string(size) + " bytes)");
  const std::byte* bytes = st.file_.bytes().data();

  const uint64_t header_len = load<uint64_t>(bytes);
  if (header_len > kMaxHeaderBytes)
    throw InputError(file, "header length " + std::to_string(header_len) + " is above the 100 MB limit");
  if (header_len > size - 8)
    throw InputError(file, "header length " + std::to_string(header_len) + " is larger than the file (" +
                               std::to_string(size) + " bytes)");
  const char* header = reinterpret_cast<const char*>(bytes + 8);
  st.data_ = std::span<const std::byte>(bytes + 8 + header_len, size - 8 - header_len);

  // The spec lets writers pad the header with spaces; JSON whitespace after the value is legal anyway.
  // nlohmann stops at a NUL as if the input ended, so NUL padding (or garbage after one) would slip by.
  if (std::memchr(header, '\0', header_len) != nullptr)
    throw InputError(file, "header is not valid JSON: it contains a NUL byte");
  ordered_json j;
  try {
    j = ordered_json::parse(header, header + header_len, DuplicateKeyGuard(file));
  } catch (const ordered_json::exception& e) {
    throw InputError(file, std::string("header is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw InputError(file, "header is not a JSON object");

  for (const auto& [name, value] : j.items()) {
    if (name == "__metadata__") {
      st.metadata_ = parse_metadata(file, value);
      continue;
    }
    TensorEntry e = parse_entry(file, name, value);
    if (e.end > st.data_.size())
      throw InputError(file, "tensor " + quoted(name) + ": data_offsets end " + std::to_string(e.end) +
                                 " is beyond the data section of " + std::to_string(st.data_.size()) + " bytes");
    st.entries_.push_back(std::move(e));
  }

  // The tensors must tile the data section exactly: overlaps alias data, gaps and trailing bytes hide it.
  std::stable_sort(st.entries_.begin(), st.entries_.end(), [](const TensorEntry& a, const TensorEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t pos = 0;
  const TensorEntry* prev = nullptr;
  for (const TensorEntry& e : st.entries_) {
    if (e.begin < pos)
      throw InputError(file, "tensors " + quoted(prev->name) + " and " + quoted(e.name) + " overlap");
    if (e.begin > pos)
      throw InputError(file, std::to_string(e.begin - pos) + " unused bytes (a hole) before tensor " +
                                 quoted(e.name) + (prev ? ", after " + quoted(prev->name) : std::string()));
    pos = e.end;
    prev = &e;
  }
  if (pos != st.data_.size())
    throw InputError(file, std::to_string(st.data_.size() - pos) +
                               " trailing bytes after the last tensor in the data section");

  for (size_t i = 0; i < st.entries_.size(); ++i) st.index_.emplace(st.entries_[i].name, i);
  return st;
}

const TensorEntry* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

std::vector<float> SafetensorsFile::read_f32(const TensorEntry& entry) const {
  return read_floating<float>(path_, data_, entry);
}

std::vector<double> SafetensorsFile::read_f64(const TensorEntry& entry) const {
  return read_floating<double>(path_, data_, entry);
}

std::vector<int64_t> SafetensorsFile::read_i64(const TensorEntry& entry) const {
  const TensorEntry& e = entry;
  if (e.begin > e.end || e.end > data_.size() || e.numel() * dtype_size(e.dtype) != e.end - e.begin)
    throw std::out_of_range("tensor '" + e.name + "' does not belong to " + path_.string());
  const std::byte* p = data_.data() + e.begin;
  const size_t n = e.numel(), step = dtype_size(e.dtype);
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i, p += step) {
    switch (e.dtype) {
      case DType::I64: out[i] = load<int64_t>(p); break;
      case DType::I32: out[i] = load<int32_t>(p); break;
      case DType::I16: out[i] = load<int16_t>(p); break;
      case DType::I8: out[i] = load<int8_t>(p); break;
      case DType::U8: out[i] = load<uint8_t>(p); break;
      case DType::BOOL: out[i] = load<uint8_t>(p) != 0; break;
      default:
        throw InputError(path_, "tensor " + quoted(e.name) + " has floating dtype " + dtype_name(e.dtype) +
                                    ", expected an integer dtype");
    }
  }
  return out;
}

void write_safetensors(const std::filesystem::path& file, const std::vector<OutputTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  // Validate everything first, so a bad argument never leaves a temporary file behind.
  std::set<std::string> names;
  for (const OutputTensor& t : tensors) check_output(t, names);

  ordered_json header = ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const OutputTensor& t : tensors) {
    const uint64_t bytes = t.values.size() * dtype_size(t.dtype);
    header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const ordered_json::exception& e) {  // e.g. a name or metadata value that is not UTF-8
    throw std::invalid_argument(std::string("write_safetensors: ") + e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // data section starts 8-byte aligned, as the spec recommends
  const uint64_t header_len = text.size();

  // Write a temporary and rename it over the target: readers never see a half-written file.
  // (No fsync: this guards against our own crashes, not against power loss.)
  const std::filesystem::path tmp = file.string() + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError(file, "cannot create " + tmp.string() + ": " + std::strerror(errno));
  try {
    write_all(fd, file, &header_len, 8);
    write_all(fd, file, text.data(), text.size());
    for (const OutputTensor& t : tensors) {
      const std::vector<char> bytes = encode(t);
      write_all(fd, file, bytes.data(), bytes.size());
    }
    if (::close(fd) != 0) {
      fd = -1;
      throw InputError(file, std::string("write failed: ") + std::strerror(errno));
    }
    fd = -1;
    if (::rename(tmp.c_str(), file.c_str()) != 0)
      throw InputError(file, "cannot rename " + tmp.string() + ": " + std::strerror(errno));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
}

}  // namespace lenscheck
