#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "attention-residual-skipped",
                    .description = "layer 1's attention block without its residual",
                    .kind = Kind::implementation,
                    .run = runtime_fault(runtime::Fault::attention_residual_skipped)});

}  // namespace lenscheck::mutation
