#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "key-as-value",
                    .description = "K used where V belongs",
                    .kind = Kind::implementation,
                    .run = runtime_fault(runtime::Fault::key_as_value)});

}  // namespace lenscheck::mutation
