#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "token-type-dropped",
                    .description = "token type embedding dropped",
                    .kind = Kind::implementation,
                    .run = runtime_fault(runtime::Fault::token_type_dropped)});

}  // namespace lenscheck::mutation
