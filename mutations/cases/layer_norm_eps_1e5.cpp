#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "layer-norm-eps-1e-5",
                    .description = "LayerNorm eps 1e-5 instead of the config's 1e-12",
                    .kind = Kind::implementation,
                    .run = runtime_fault(runtime::Fault::layer_norm_eps_1e5)});

}  // namespace lenscheck::mutation
