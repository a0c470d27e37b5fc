#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "gelu-tanh-approximation",
                    .description = "tanh GELU where the config says erf",
                    .kind = Kind::implementation,
                    .run = runtime_fault([](Stages& s) {
                      s.activate = [](const Pass& p, float* intermediate) {
                        runtime::gelu_tanh(intermediate, p.T * p.I, p.workers);
                      };
                    })});

}  // namespace lenscheck::mutation
