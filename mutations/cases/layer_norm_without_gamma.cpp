#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "layer-norm-without-gamma",
                    .description = "LayerNorm without its scale gamma",
                    .kind = Kind::implementation,
                    .run = runtime_fault(runtime::Fault::layer_norm_without_gamma)});

}  // namespace lenscheck::mutation
