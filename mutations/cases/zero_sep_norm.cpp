#include "mutations/special_norms.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "zero-sep-norm",
                    .description = "‖v‖ of [SEP] forced to 0: [SEP] weighs exactly 0 and every row moves",
                    .kind = Kind::metric,
                    .run = [](const Context& ctx) { return scale_special_norms(ctx, 1.0f, 0.0f); }});

}  // namespace lenscheck::mutation
