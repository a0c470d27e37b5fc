#include "mutations/special_norms.h"

#include <fmt/format.h>

#include <cmath>

namespace lenscheck::mutation {

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
  size_t attending = 0, moved = 0, wrong = 0;
  double largest = 0;
  std::string first_wrong;
  const size_t rows = for_each_row_pair(base, scaled, [&](const std::string& s, const WordRow& b, const WordRow& m) {
    const double before = *b.sink_share(), after = m.sink_share().value_or(NAN);
    // A row must move where the scaled token carries enough of it for the move to be seen: at least
    // 1e-12 of the row, so that the share changes by far more than a double's rounding (2e-16).
    // Sharp attention on trained weights leaves rows whose [CLS] weight is 1e-30 or subnormal; those
    // must only not move the wrong way.
    const double resolvable = 1e-12 * b.total();
    const bool attends = (cls != 1.0f && b.cls > resolvable) || (sep != 1.0f && b.sep > resolvable);
    attending += attends;
    const double direction = (cls > 1.0f || sep > 1.0f) ? 1.0 : -1.0;
    const bool moved_right = (after - before) * direction > 0;
    moved += attends && moved_right;
    largest = std::max(largest, std::fabs(after - before));
    bool ok = attends ? moved_right : (after - before) * direction >= 0;
    if (cls == 0.0f) ok = ok && m.cls == 0.0;
    if (sep == 0.0f) ok = ok && m.sep == 0.0;
    if (cls == 0.0f && sep == 0.0f) ok = ok && after == 0.0;
    if (!ok && ++wrong == 1) first_wrong = fmt::format(", first: {} head {} word {} ({:.6g} → {:.6g})", s, b.head.label(), b.word, before, after);
  });
  return Outcome{wrong == 0 && attending > 0, "rows moved as the norms did",
                 fmt::format("{} rows checked, {} attend to the scaled token(s), {} moved the right way, "
                             "largest move of the sink share {:.4f}; {} rows wrong{}",
                             rows, attending, moved, largest, wrong, first_wrong)};
}

}  // namespace lenscheck::mutation
