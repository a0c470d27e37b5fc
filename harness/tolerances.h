#pragma once
// Tolerances, kept in YAML: the first rule whose pattern matches a trace name applies.
// Closeness is torch.testing.assert_close's rule, |a - b| <= atol + rtol * |b| with b the reference;
// NaN and Inf are never close.
#include <filesystem>
#include <string>
#include <vector>

namespace lenscheck {

struct Tolerance {
  std::string pattern;  // '*' matches any run of characters, e.g. "layer.*.attention.probs"
  double atol = 0;
  double rtol = 0;
  int line = 0;  // where the rule stands in its file
};

bool pattern_matches(const std::string& pattern, const std::string& name);

struct ToleranceSet {
  std::vector<Tolerance> rules;
  const Tolerance* match(const std::string& name) const;
};

struct Tolerances {
  std::filesystem::path file;
  ToleranceSet agreement;  // fp32 runtime vs fp32 oracle: the release gate
  ToleranceSet truth;      // each fp32 implementation vs the fp64 oracle (--truth)
};

// Throws InputError naming the file, the line and the problem (unknown key, wrong type, ...).
Tolerances load_tolerances(const std::filesystem::path& file);

// Holds the rules against the tensor names a trace has: a rule without '*' that names no tensor is an
// InputError (a typo would silently compare nothing); a rule that applies to no tensor (it matches
// none, or earlier rules take all it matches) is returned as a warning.
std::vector<std::string> check_coverage(const Tolerances& tolerances, const std::vector<std::string>& names);

}  // namespace lenscheck
