#include "gate/tolerances.h"

#include <fmt/format.h>

#include "common/yaml_input.h"
#include "model/error.h"

namespace lenscheck {

bool pattern_matches(const std::string& pattern, const std::string& name) {
  // Iterative glob with '*' only: backtrack to the last star on a mismatch.
  size_t p = 0, n = 0, star = std::string::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

const Tolerance* ToleranceSet::match(const std::string& name) const {
  for (const Tolerance& t : rules)
    if (pattern_matches(t.pattern, name)) return &t;
  return nullptr;
}

namespace {

ToleranceSet read_rules(const std::filesystem::path& file, const YAML::Node& list, const std::string& section,
                        Rule kind) {
  namespace Y = yaml_input;
  Y::require_sequence(file, list, section);
  ToleranceSet set;
  for (const YAML::Node& item : list) {
    Y::require_map(file, item, "a tolerance rule");
    Tolerance t;
    if (kind == Rule::derived) {
      Y::only_keys(file, item, {"pattern", "k"});
      t.k = Y::as_number(file, Y::required(file, item, "k"), "k");
      if (!(t.k > 0)) Y::fail(file, item, "k must be positive");
    } else {
      Y::only_keys(file, item, {"pattern", "atol", "rtol"});
      t.atol = Y::as_number(file, Y::required(file, item, "atol"), "atol");
      t.rtol = Y::as_number(file, Y::required(file, item, "rtol"), "rtol");
      if (t.atol < 0 || t.rtol < 0) Y::fail(file, item, "atol and rtol must be non-negative");
    }
    t.pattern = Y::as_string(file, Y::required(file, item, "pattern"), "pattern");
    t.line = item.Mark().line + 1;
    if (t.pattern.empty()) Y::fail(file, item, "pattern must not be empty");
    set.rules.push_back(t);
  }
  if (set.rules.empty()) Y::fail(file, list, section + " has no rules");
  return set;
}

}  // namespace

Tolerances load_tolerances(const std::filesystem::path& file) {
  namespace Y = yaml_input;
  const YAML::Node root = Y::load(file);
  Y::require_map(file, root, "the tolerances file");
  Y::only_keys(file, root, {"derived", "absolute"});
  Tolerances t;
  t.file = file;
  const YAML::Node derived = Y::required(file, root, "derived");
  Y::require_map(file, derived, "derived");
  Y::only_keys(file, derived, {"floor", "rules"});
  t.floor = Y::as_number(file, Y::required(file, derived, "floor"), "floor");
  if (!(t.floor > 0)) Y::fail(file, derived["floor"], "floor must be positive");
  t.derived = read_rules(file, Y::required(file, derived, "rules"), "derived rules", Rule::derived);
  t.absolute = read_rules(file, Y::required(file, root, "absolute"), "absolute", Rule::absolute);
  return t;
}

std::vector<std::string> check_coverage(const Tolerances& t, const std::vector<std::string>& names) {
  std::vector<std::string> warnings;
  for (const auto& [section, set] : {std::pair{"derived", &t.derived}, std::pair{"absolute", &t.absolute}})
    for (const Tolerance& rule : set->rules) {
      bool matches = false, applies = false;
      for (const std::string& n : names) {
        matches = matches || pattern_matches(rule.pattern, n);
        applies = applies || set->match(n) == &rule;
      }
      if (!matches && rule.pattern.find('*') == std::string::npos)
        throw InputError(t.file, fmt::format("line {}: {} rule \"{}\" names no tensor of the trace", rule.line,
                                             section, rule.pattern));
      if (!applies)
        warnings.push_back(fmt::format("{}: line {}: {} rule \"{}\" applies to no tensor ({})", t.file.string(),
                                       rule.line, section, rule.pattern,
                                       matches ? "earlier rules take every tensor it matches" : "it matches none"));
    }
  return warnings;
}

}  // namespace lenscheck
