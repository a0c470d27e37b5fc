#pragma once
// Tolerances, kept in YAML: the first rule whose pattern matches a trace name applies.
//
// The default rule is derived, not fitted: the fp64 oracle is the truth, and a candidate may be at most
// k times as far from it as libtorch's own fp32 result is, on this very model and input (see
// fixtures/tolerances.yaml for the statistic and where k comes from). The absolute rule,
// torch.testing.assert_close's |a - b| <= atol + rtol * |b| against the fp32 oracle, is kept for
// users who ask for it (`verify --absolute`). NaN and Inf are never close under either.
#include <filesystem>
#include <string>
#include <vector>

namespace lenscheck {

struct Tolerance {
  std::string pattern;  // '*' matches any run of characters, e.g. "layer.*.attention.probs"
  double k = 0;         // derived rule: the largest error ratio that passes
  double atol = 0;      // absolute rule
  double rtol = 0;
  int line = 0;         // where the rule stands in its file
};

bool pattern_matches(const std::string& pattern, const std::string& name);

struct ToleranceSet {
  std::vector<Tolerance> rules;
  const Tolerance* match(const std::string& name) const;
};

// Which of the two rules judges: the derived one (the release gate) or the absolute one.
enum class Rule { derived, absolute };

struct Tolerances {
  std::filesystem::path file;
  // Derived rule: the benchmark error (relative, gate/compare.h) never counts as less than
  // floor · FLT_EPSILON, so a tensor that libtorch happens to compute exactly does not demand exactness.
  double floor = 0;
  ToleranceSet derived;   // k per tensor family: the release gate
  ToleranceSet absolute;  // atol and rtol per tensor family: `verify --absolute`
};

// Throws InputError naming the file, the line and the problem (unknown key, wrong type, a k that is
// missing or not positive, ...).
Tolerances load_tolerances(const std::filesystem::path& file);

// Holds the rules against the tensor names a trace has: a rule without '*' that names no tensor is an
// InputError (a typo would silently compare nothing); a rule that applies to no tensor (it matches
// none, or earlier rules take all it matches) is returned as a warning.
std::vector<std::string> check_coverage(const Tolerances& tolerances, const std::vector<std::string>& names);

}  // namespace lenscheck
