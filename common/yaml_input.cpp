#include "common/yaml_input.h"

#include <fmt/format.h>

#include <yaml-cpp/depthguard.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <set>

#include "model/error.h"

namespace lenscheck::yaml_input {

YAML::Node load(const std::filesystem::path& file) {
  if (!std::filesystem::is_regular_file(file)) throw InputError(file, "no such file");
  // yaml-cpp says "bad file" for a file it may not open, which reads like malformed YAML.
  if (!std::ifstream(file)) throw InputError(file, "cannot be read");
  try {
    YAML::Node root = YAML::LoadFile(file.string());
    if (!root || root.IsNull()) throw InputError(file, "empty YAML document");
    return root;
  } catch (const YAML::DeepRecursion& e) {  // yaml-cpp's own message for it is "bad file"
    throw InputError(file, fmt::format("line {}: malformed YAML: nested {} levels deep, too deep to read",
                                       e.mark.line + 1, e.depth()));
  } catch (const YAML::Exception& e) {
    throw InputError(file, fmt::format("line {}: malformed YAML: {}", e.mark.line + 1, e.msg));
  }
}

void fail(const std::filesystem::path& file, const YAML::Node& at, const std::string& problem) {
  throw InputError(file, fmt::format("line {}: {}", at.Mark().line + 1, problem));
}

void require_map(const std::filesystem::path& file, const YAML::Node& node, const std::string& what) {
  if (!node.IsMap()) fail(file, node, what + " must be a mapping");
}

void require_sequence(const std::filesystem::path& file, const YAML::Node& node,
                      const std::string& what) {
  if (!node.IsSequence()) fail(file, node, what + " must be a list");
}

void only_keys(const std::filesystem::path& file, const YAML::Node& map,
               std::initializer_list<const char*> allowed) {
  std::set<std::string> seen;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) fail(file, kv.first, "a key must be a plain string");
    const std::string key = kv.first.Scalar();
    // yaml-cpp keeps a repeated key silently and lookups see only one of them: ambiguous input.
    if (!seen.insert(key).second) fail(file, kv.first, fmt::format("duplicate key \"{}\"", key));
    bool known = false;
    for (const char* a : allowed) known = known || key == a;
    if (!known) {
      std::string list;
      for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
      fail(file, kv.first, fmt::format("unknown key \"{}\" (expected: {})", key, list));
    }
  }
}

const YAML::Node required(const std::filesystem::path& file, const YAML::Node& map, const char* key) {
  const YAML::Node n = map[key];
  if (!n) fail(file, map, fmt::format("missing key \"{}\"", key));
  return n;
}

std::string as_string(const std::filesystem::path& file, const YAML::Node& node,
                      const std::string& what) {
  if (!node.IsScalar()) fail(file, node, what + " must be a string");
  return node.Scalar();
}

double as_number(const std::filesystem::path& file, const YAML::Node& node, const std::string& what) {
  if (!node.IsScalar()) fail(file, node, what + " must be a number");
  const std::string& s = node.Scalar();
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v))
    fail(file, node, fmt::format("{} must be a finite number, got \"{}\"", what, s));
  return v;
}

long as_integer(const std::filesystem::path& file, const YAML::Node& node, const std::string& what) {
  const double v = as_number(file, node, what);
  if (v != std::floor(v) || std::fabs(v) > 1e15)
    fail(file, node, fmt::format("{} must be an integer, got \"{}\"", what, node.Scalar()));
  return static_cast<long>(v);
}

}  // namespace lenscheck::yaml_input
