#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "value-norm-over-all-heads",
                    .description = "‖v‖ over the token's whole hidden vector, not the head's slice",
                    .kind = Kind::implementation,
                    .run = runtime_fault(runtime::Fault::value_norm_over_all_heads)});

}  // namespace lenscheck::mutation
