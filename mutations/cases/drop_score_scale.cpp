#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "drop-score-scale",
                    .description = "attention scores not divided by sqrt(d_h)",
                    .kind = Kind::implementation,
                    .run = runtime_fault(runtime::Fault::drop_score_scale)});

}  // namespace lenscheck::mutation
