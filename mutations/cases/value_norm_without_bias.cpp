#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "value-norm-without-bias",
                    .description = "‖v‖ of x·W_V with b_V dropped",
                    .kind = Kind::implementation,
                    .run = runtime_fault(runtime::Fault::value_norm_without_bias)});

}  // namespace lenscheck::mutation
