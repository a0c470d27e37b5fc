#include <vector>

#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "value-norm-without-bias",
                    .description = "‖v‖ of x·W_V with b_V dropped",
                    .kind = Kind::implementation,
                    .run = runtime_fault([](Stages& s) {
                      s.value_norms = [](const Pass& p, const LayerOf& l, const float* v, float* value_norm) {
                        std::vector<float> unbiased(p.Dh);
                        for (size_t h = 0; h < p.H; ++h)
                          for (size_t tok = 0; tok < p.T; ++tok) {
                            for (size_t e = 0; e < p.Dh; ++e)
                              unbiased[e] = v[tok * p.D + h * p.Dh + e] - l.w.value_b.values[h * p.Dh + e];
                            value_norm[h * p.T + tok] = runtime::l2_norm(unbiased.data(), p.Dh);
                          }
                      };
                    })});

}  // namespace lenscheck::mutation
