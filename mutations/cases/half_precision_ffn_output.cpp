#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "half-precision-ffn-output",
                    .description = "the FFN output matmul accumulates in fp16",
                    .kind = Kind::implementation,
                    .run = runtime_fault(runtime::Fault::half_precision_ffn_output)});

}  // namespace lenscheck::mutation
