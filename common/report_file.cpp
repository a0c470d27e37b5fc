#include "common/report_file.h"

#include <fstream>
#include <stdexcept>

#include "model/error.h"

#include <lenscheck_build_version.h>  // generated at each build: CMakeLists.txt

namespace lenscheck {

std::string build_version() { return LENSCHECK_BUILD_VERSION; }

void write_text_file(const std::filesystem::path& file, const std::string& text) {
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path());
  const auto tmp = std::filesystem::path(file.string() + ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) throw InputError(file, "cannot write");
  }
  std::filesystem::rename(tmp, file);
}

std::string xml_escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

MarkdownTable::MarkdownTable(const std::vector<std::string>& header) : columns_(header.size()) {
  line(header);
  text_ += "|";
  for (size_t i = 0; i < columns_; ++i) text_ += "---|";
  text_ += "\n";
}

MarkdownTable& MarkdownTable::row(const std::vector<std::string>& cells) {
  if (cells.size() != columns_)
    throw std::logic_error("a Markdown row of " + std::to_string(cells.size()) + " cells under " +
                           std::to_string(columns_) + " columns");
  line(cells);
  return *this;
}

void MarkdownTable::line(const std::vector<std::string>& cells) {
  text_ += "|";
  for (const std::string& c : cells) text_ += c.empty() ? " |" : " " + c + " |";
  text_ += "\n";
}

}  // namespace lenscheck
