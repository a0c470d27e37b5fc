#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "squared-value-norm",
                    .description = "‖v‖² instead of ‖v‖",
                    .kind = Kind::implementation,
                    .run = runtime_fault(runtime::Fault::squared_value_norm)});

}  // namespace lenscheck::mutation
