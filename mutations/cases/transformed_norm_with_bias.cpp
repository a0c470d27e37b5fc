#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "transformed-norm-with-bias",
                    .description = "b_O included in f(x)",
                    .kind = Kind::implementation,
                    .run = runtime_fault(runtime::Fault::transformed_norm_with_bias)});

}  // namespace lenscheck::mutation
