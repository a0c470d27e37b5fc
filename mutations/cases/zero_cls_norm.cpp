#include "mutations/special_norms.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "zero-cls-norm",
                    .description = "‖v‖ of [CLS] forced to 0: [CLS] weighs exactly 0 and every row moves",
                    .kind = Kind::metric,
                    .run = [](const Context& ctx) { return scale_special_norms(ctx, 0.0f, 1.0f); }});

}  // namespace lenscheck::mutation
