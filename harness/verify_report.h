#pragma once
// What `lenscheck verify` writes: Markdown for people, JSON for tools, JUnit for CI.
#include <filesystem>

#include "harness/verify.h"

namespace lenscheck {

void write_verify_markdown(const VerifyResult& result, const std::filesystem::path& file);
void write_verify_json(const VerifyResult& result, const std::filesystem::path& file);
void write_verify_junit(const VerifyResult& result, const std::filesystem::path& file);

// Writes `text` to `file` through a temporary name, creating the parent folder.
void write_text_file(const std::filesystem::path& file, const std::string& text);

}  // namespace lenscheck
