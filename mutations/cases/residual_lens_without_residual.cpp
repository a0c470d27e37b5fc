#include <vector>

#include "mutations/mutation.h"

namespace lenscheck::mutation {

// AttnRes-N collapses to ‖Σ_h α f(x)‖, the 2020 lens summed over heads, and the residual ratio to the
// attention one: the lens must feel the token's own x_i.
LENSCHECK_MUTATION({.name = "residual-lens-without-residual",
                    .description = "the residual lens leaves out the token's own x_i (z_ij = Σ_h α f(x_j))",
                    .kind = Kind::implementation,
                    .run = runtime_fault([](Stages& s) {
                      s.residual_lenses = [shipped = s.residual_lenses](const Pass& p, const LayerOf& l,
                                                                        const float* probs, const float* fx,
                                                                        const float*, const float* y,
                                                                        const runtime::ResidualLenses& out) {
                        const std::vector<float> zeros(p.T * p.D, 0.0f);
                        shipped(p, l, probs, fx, zeros.data(), y, out);
                      };
                    })});

}  // namespace lenscheck::mutation
