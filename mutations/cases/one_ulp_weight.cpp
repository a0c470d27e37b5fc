#include <cmath>

#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "one-ulp-weight",
                    .description = "one element of layer 2's W_V moved by 1 ULP",
                    .kind = Kind::implementation,
                    .equivalent_because =
                        "a 1-ULP change (relative 6e-8) of one of 65 536 weights moves v by at most ~1e-9, "
                        "far below fp32's own accumulation error (the oracle and runtime already differ by "
                        "1e-6); only a bit-exact comparison (atol = rtol = 0 against a runtime of identical "
                        "summation order) would kill it, and such a tolerance would also fail the unmutated "
                        "runtime",
                    .run = weights_fault([](BertWeights& w) {
                      float& x = w.layers.at(2).value_w.values.at(1234);
                      x = std::nextafter(x, 1.0f);
                    })});

}  // namespace lenscheck::mutation
