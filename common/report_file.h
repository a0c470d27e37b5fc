#pragma once
// What every report shares, whichever command writes it: the build it names, and how its file is
// written.
#include <filesystem>
#include <string>
#include <vector>

namespace lenscheck {

std::string build_version();

// Writes `text` to `file` through a temporary name, creating the parent folder.
void write_text_file(const std::filesystem::path& file, const std::string& text);

// `text` with &, <, > and " escaped, for XML text and attributes (JUnit, SVG): sentence ids, words and
// tensor names hold them.
std::string xml_escaped(const std::string& text);

// A Markdown table as every report writes one: the header, its rule, then each row as added. A cell is
// written as given ('|' in a cell is the writer's to avoid).
class MarkdownTable {
 public:
  explicit MarkdownTable(const std::vector<std::string>& header);
  // One row, as many cells as the header has (std::logic_error otherwise).
  MarkdownTable& row(const std::vector<std::string>& cells);
  const std::string& markdown() const { return text_; }

 private:
  void line(const std::vector<std::string>& cells);
  size_t columns_;
  std::string text_;
};

}  // namespace lenscheck
