#pragma once
// What every report shares, whichever command writes it: the build it names, and how its file is
// written.
#include <filesystem>
#include <string>

namespace lenscheck {

std::string build_version();

// Writes `text` to `file` through a temporary name, creating the parent folder.
void write_text_file(const std::filesystem::path& file, const std::string& text);

// `text` with &, <, > and " escaped, for XML text and attributes (JUnit, SVG): sentence ids, words and
// tensor names hold them.
std::string xml_escaped(const std::string& text);

}  // namespace lenscheck
