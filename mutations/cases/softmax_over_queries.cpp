#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "softmax-over-queries",
                    .description = "softmax over the query axis instead of the key axis",
                    .kind = Kind::implementation,
                    .run = runtime_fault(runtime::Fault::softmax_over_queries)});

}  // namespace lenscheck::mutation
