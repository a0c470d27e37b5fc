#include "mutations/special_norms.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "zero-special-norms",
                    .description = "‖v‖ of [CLS] and [SEP] forced to 0: every sink share is exactly 0",
                    .kind = Kind::metric,
                    .run = [](const Context& ctx) { return scale_special_norms(ctx, 0.0f, 0.0f); }});

}  // namespace lenscheck::mutation
