#include "mutations/special_norms.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "inflate-cls-norm",
                    .description = "‖v‖ of [CLS] x10: the sink share rises in every row that attends to [CLS]",
                    .kind = Kind::metric,
                    .run = [](const Context& ctx) { return scale_special_norms(ctx, 10.0f, 1.0f); }});

}  // namespace lenscheck::mutation
