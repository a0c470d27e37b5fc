#include <fmt/format.h>

#include <cfloat>
#include <cmath>

#include "mutations/mutation.h"

namespace lenscheck::mutation {

namespace {

// Every ‖v‖ times c: the shares are ratios, so they must not move. For a power of two the scaling is
// exact in every product and sum whose result is a normal float, so the shares must be bit-identical
// but for products below FLT_MIN: sharp attention on trained weights has probabilities of 1e-40,
// whose products are subnormal and round to a coarser step, moving a share by a few 2^-149 over the
// row's total, far below FLT_MIN. Otherwise within rounding.
Outcome scale_all(const Context& ctx, float c, double bound) {
  const auto scaled = lens_rows(ctx, [c](const SentenceRun& run, int layer) {
    std::vector<float> n = runtime_norms(run, layer);
    for (float& x : n) x *= c;
    return n;
  });
  double largest = 0;
  size_t differ = 0, undefined = 0, definedness_changed = 0;
  const size_t rows = for_each_row_pair(lens_rows(ctx, runtime_norms), scaled,
      [&](const std::string&, const WordRow& b, const WordRow& m) {
        const std::optional<double> before = b.sink_share(), after = m.sink_share();
        // A row without weight stays without: c · 0 = 0.
        if (!before || !after) {
          undefined += !before && !after;
          definedness_changed += before.has_value() != after.has_value();
          return;
        }
        largest = std::max(largest, std::fabs(*after - *before));
        differ += !same_bits(*after, *before);
      });
  const bool ok = definedness_changed == 0 && (bound == 0 ? largest < FLT_MIN : largest <= bound);
  return Outcome{ok, bound == 0 ? "bit-identical shares but for subnormal products" : fmt::format("shares within {:.0e}", bound),
                 fmt::format("x{}: {} rows checked, {} sink shares differ in some bit, largest change {:.3g}, "
                             "{} undefined before and after{}",
                             c, rows, differ, largest, undefined,
                             definedness_changed ? fmt::format(", {} ROWS CHANGED DEFINEDNESS", definedness_changed) : "")};
}

}  // namespace

// A power of two must leave the shares bit-identical; c = 3 rounds α·(3n) once more than α·n, so
// each weight moves by at most 2^-24 relative and a share by a few of those.
LENSCHECK_MUTATION({.name = "scale-values",
                    .description = "every ‖v‖ x4, x0.5 (bit-identical shares, but for subnormal products) and x3 "
                                   "(within 1e-6)",
                    .kind = Kind::metric,
                    .run = [](const Context& ctx) {
                      const Outcome up = scale_all(ctx, 4.0f, 0), down = scale_all(ctx, 0.5f, 0),
                                    three = scale_all(ctx, 3.0f, 1e-6);
                      return Outcome{up.caught && down.caught && three.caught, "shares unchanged",
                                     up.evidence + "; " + down.evidence + "; " + three.evidence};
                    }});

}  // namespace lenscheck::mutation
