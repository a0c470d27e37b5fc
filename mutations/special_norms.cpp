#include "mutations/special_norms.h"

#include <fmt/format.h>

#include <cfloat>
#include <cmath>

namespace lenscheck::mutation {

namespace {

// How far a mutated row's share may lie from the closed form. A scaled special weight is
// fl(α·fl(n·f)) where the prediction takes f·fl(α·n): three roundings of 2^-24 relative apart, or,
// for results below FLT_MIN, up to half a subnormal step 2^-150 each, the base one times f. The word
// row averages subword rows in double. So the special mass S is off by at most
// ΔS = 3·2^-24·S + (2 + f_cls + f_sep)·2^-150, and the share S / (S + C) by at most
// C·ΔS / ((S + C)(S + C − ΔS)); both shares are sums of at most T terms in double, which adds
// (2T + 4)·DBL_EPSILON.
double share_bound(double special, double content, double f_cls, double f_sep, size_t tokens) {
  const double d_special = 3 * 0x1p-24 * special + (2 + f_cls + f_sep) * 0x1p-150;
  const double total = special + content;
  const double from_float = total > d_special ? content * d_special / (total * (total - d_special)) : 1.0;
  return from_float + double(2 * tokens + 4) * DBL_EPSILON;
}

bool same_content(const WordRow& a, const WordRow& b) {
  if (a.content.size() != b.content.size()) return false;
  for (size_t i = 0; i < a.content.size(); ++i)
    if (!same_bits(a.content[i], b.content[i])) return false;
  return true;
}

}  // namespace

Outcome scale_special_norms(const Context& ctx, float cls, float sep) {
  const auto scaled = lens_rows(ctx, [&](const SentenceRun& run, int layer) {
    std::vector<float> n = runtime_norms(run, layer);
    const size_t T = run.encoding.ids.size();
    for (size_t h = 0; h < n.size() / T; ++h) {
      n[h * T] *= cls;
      n[h * T + T - 1] *= sep;
    }
    return n;
  });
  const auto base = lens_rows(ctx, runtime_norms);
  size_t moved = 0, saturated = 0, unresolvable = 0, undefined = 0, wrong = 0;
  double largest_move = 0, largest_deviation = 0;  // the deviation as a fraction of the row's bound
  std::string first_wrong;
  const size_t rows = for_each_row_pair(base, scaled, [&](const std::string& s, const WordRow& b, const WordRow& m) {
    double content = 0;
    for (double c : b.content) content += c;
    const double special = double(cls) * b.cls + double(sep) * b.sep;
    const std::optional<double> before = b.sink_share(), after = m.sink_share();
    std::optional<double> predicted;
    if (special + content > 0) predicted = special / (special + content);
    bool ok = same_content(b, m) && (cls != 0.0f || m.cls == 0.0) && (sep != 0.0f || m.sep == 0.0) &&
              predicted.has_value() == after.has_value();
    if (!predicted) {
      ++undefined;
    } else if (ok) {
      const double bound = share_bound(special, content, cls, sep, b.content.size() + 2);
      const double deviation = std::fabs(*after - *predicted);
      // Both special factors 0 leave no sink at all: the share is 0 exactly, not within rounding.
      ok = cls == 0.0f && sep == 0.0f ? *after == 0.0 : deviation <= bound;
      largest_deviation = std::max(largest_deviation, deviation / bound);
      // A row with weight after the scaling had weight before it: `before` is defined here.
      if (std::fabs(*predicted - *before) > bound) {
        ++moved;
        largest_move = std::max(largest_move, std::fabs(*after - *before));
      } else if (content <= DBL_EPSILON * special) {
        ++saturated;
      } else {
        ++unresolvable;
      }
    }
    if (!ok && ++wrong == 1)
      first_wrong = fmt::format(", first: {} head {} word {} ({} → {}, predicted {})", s, b.head.label(), b.word,
                                before ? fmt::format("{:.9g}", *before) : "undefined",
                                after ? fmt::format("{:.9g}", *after) : "undefined",
                                predicted ? fmt::format("{:.9g}", *predicted) : "undefined");
  });
  return Outcome{wrong == 0 && moved > 0, "rows moved as the closed form predicts",
                 fmt::format("{} rows checked: {} moved as predicted (largest move of the sink share {:.4f}; "
                             "largest deviation from the closed form {:.2f} of the row's rounding bound), "
                             "{} rows saturated, {} with no resolvable weight on the scaled token(s), "
                             "{} left undefined (no weight at all), as predicted; {} rows wrong{}",
                             rows, moved, largest_move, largest_deviation, saturated, unresolvable, undefined, wrong,
                             first_wrong)};
}

}  // namespace lenscheck::mutation
