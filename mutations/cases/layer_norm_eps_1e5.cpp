#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "layer-norm-eps-1e-5",
                    .description = "LayerNorm eps 1e-5 instead of the config's 1e-12",
                    .kind = Kind::implementation,
                    .run = runtime_fault([](Stages& s) {
                      s.layer_norm = [](const Pass& p, float* x, const Param& gain, const Param& bias) {
                        runtime::layer_norm(x, p.T, p.D, gain.values.data(), bias.values.data(), 1e-5f, p.workers);
                      };
                    })});

}  // namespace lenscheck::mutation
