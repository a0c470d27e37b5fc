#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "squared-value-norm",
                    .description = "‖v‖² instead of ‖v‖",
                    .kind = Kind::implementation,
                    .run = runtime_fault([](Stages& s) {
                      s.value_norms = [shipped = s.value_norms](const Pass& p, const LayerOf& l, const float* v,
                                                                float* value_norm) {
                        shipped(p, l, v, value_norm);
                        for (size_t e = 0; e < p.H * p.T; ++e) value_norm[e] *= value_norm[e];
                      };
                    })});

}  // namespace lenscheck::mutation
