#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "transposed-output-slice",
                    .description = "f(x) through the head's slice of W_O transposed",
                    .kind = Kind::implementation,
                    .run = runtime_fault(runtime::Fault::transposed_output_slice)});

}  // namespace lenscheck::mutation
