#pragma once
#include <filesystem>
#include <string>
#include <string_view>

namespace lenscheck {

std::string sha256_hex(std::string_view bytes);
std::string sha256_file(const std::filesystem::path& file);  // throws InputError if unreadable

}  // namespace lenscheck
