#include "model/vocab.h"

#include <fmt/format.h>
#include <unicode/utf8.h>

#include <fstream>
#include <iterator>

#include "model/error.h"

namespace lenscheck {

bool valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const auto n = static_cast<int64_t>(s.size());
  for (int64_t i = 0; i < n;) {
    UChar32 c;
    U8_NEXT(p, i, n, c);
    if (c < 0) return false;
  }
  return true;
}

namespace {

std::string read_file(const std::filesystem::path& file) {
  // ifstream happily "opens" a directory; say what is wrong instead of reading nothing.
  if (std::filesystem::is_directory(file)) throw InputError(file, "is a directory, not a file");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file, "cannot open for reading");
  std::string data{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw InputError(file, "read error");
  return data;
}

}  // namespace

Vocab Vocab::load(const std::filesystem::path& file) {
  const std::string data = read_file(file);
  std::vector<std::string> tokens;
  // A final "\n" ends the last line; it does not start an empty token.
  for (size_t pos = 0; pos < data.size();) {
    size_t end = data.find('\n', pos);
    if (end == std::string::npos) end = data.size();
    std::string line = data.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.pop_back();  // files written on Windows
    tokens.push_back(std::move(line));
    pos = end + 1;
  }
  return from_tokens(std::move(tokens), file);
}

Vocab Vocab::from_tokens(std::vector<std::string> tokens, const std::filesystem::path& origin) {
  Vocab v;
  v.ids_.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    const size_t line = i + 1;
    if (!valid_utf8(t)) throw InputError(origin, fmt::format("line {}: invalid UTF-8", line));
    // A line break inside a token could not be written back as one vocab.txt line.
    if (t.find_first_of("\r\n") != std::string::npos)
      throw InputError(origin, fmt::format("line {}: token contains a line break", line));
    auto [it, inserted] = v.ids_.emplace(t, static_cast<int>(i));
    if (!inserted)
      throw InputError(origin, fmt::format("duplicate token \"{}\" on lines {} and {}", t,
                                           it->second + 1, line));
  }
  std::string missing;
  auto special = [&](const char* name, int& slot) {
    slot = v.id(name);
    if (slot < 0) missing += missing.empty() ? name : std::string(", ") + name;
  };
  special("[PAD]", v.pad_);
  special("[UNK]", v.unk_);
  special("[CLS]", v.cls_);
  special("[SEP]", v.sep_);
  special("[MASK]", v.mask_);
  if (!missing.empty()) throw InputError(origin, "missing special tokens: " + missing);
  v.tokens_ = std::move(tokens);
  return v;
}

int Vocab::id(std::string_view token) const {
  auto it = ids_.find(std::string(token));
  return it == ids_.end() ? -1 : it->second;
}

void write_vocab(const std::filesystem::path& file, const std::vector<std::string>& tokens) {
  std::ofstream out(file, std::ios::binary);
  if (!out) throw InputError(file, "cannot open for writing");
  for (const auto& t : tokens) out << t << '\n';
  out.flush();
  if (!out) throw InputError(file, "write error");
}

}  // namespace lenscheck
