#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "position-ids-shifted",
                    .description = "position ids start at 1 instead of 0",
                    .kind = Kind::implementation,
                    .run = runtime_fault(runtime::Fault::position_ids_shifted)});

}  // namespace lenscheck::mutation
