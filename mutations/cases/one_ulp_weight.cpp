#include <cmath>

#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "one-ulp-weight",
                    .description = "one element of layer 2's W_V moved by 1 ULP",
                    .kind = Kind::implementation,
                    .equivalence = always_equivalent(
                        "on every model: the gate's benchmark includes rounding probes that move every weight, "
                        "this one among them, one float step up or down, so this step is one term of a "
                        "perturbation the benchmark already measured, and the gate kills only beyond k = 16 "
                        "times it; only a bit-exact comparison against a runtime of identical summation order "
                        "would kill it, and that would fail the unmutated runtime too"),
                    .run = weights_fault([](BertWeights& w) {
                      float& x = w.layers.at(2).value_w.values.at(1234);
                      x = std::nextafter(x, 1.0f);
                    })});

}  // namespace lenscheck::mutation
