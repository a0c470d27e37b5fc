#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "value-norm-over-all-heads",
                    .description = "‖v‖ over the token's whole hidden vector, not the head's slice",
                    .kind = Kind::implementation,
                    .run = runtime_fault([](Stages& s) {
                      s.value_norms = [](const Pass& p, const LayerOf&, const float* v, float* value_norm) {
                        for (size_t h = 0; h < p.H; ++h)
                          for (size_t tok = 0; tok < p.T; ++tok)
                            value_norm[h * p.T + tok] = runtime::l2_norm(v + tok * p.D, p.D);
                      };
                    })});

}  // namespace lenscheck::mutation
