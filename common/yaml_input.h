#pragma once
// Strict reading of our YAML inputs: every error names the file and the line, unknown keys are errors.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <initializer_list>
#include <string>

namespace lenscheck::yaml_input {

YAML::Node load(const std::filesystem::path& file);
[[noreturn]] void fail(const std::filesystem::path& file, const YAML::Node& at, const std::string& problem);
void require_map(const std::filesystem::path& file, const YAML::Node& node, const std::string& what);
void require_sequence(const std::filesystem::path& file, const YAML::Node& node, const std::string& what);
// Rejects any key of `map` not in `allowed`, naming the key and its line.
void only_keys(const std::filesystem::path& file, const YAML::Node& map,
               std::initializer_list<const char*> allowed);
const YAML::Node required(const std::filesystem::path& file, const YAML::Node& map, const char* key);
std::string as_string(const std::filesystem::path& file, const YAML::Node& node, const std::string& what);
double as_number(const std::filesystem::path& file, const YAML::Node& node, const std::string& what);
long as_integer(const std::filesystem::path& file, const YAML::Node& node, const std::string& what);

}  // namespace lenscheck::yaml_input
