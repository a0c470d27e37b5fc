#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "gelu-tanh-approximation",
                    .description = "tanh GELU where the config says erf",
                    .kind = Kind::implementation,
                    .run = runtime_fault(runtime::Fault::gelu_tanh_approximation)});

}  // namespace lenscheck::mutation
