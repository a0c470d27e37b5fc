#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "attention-residual-skipped",
                    .description = "layer 1's attention block without its residual",
                    .kind = Kind::implementation,
                    .run = runtime_fault([](Stages& s) {
                      s.residual = [shipped = s.residual](const Pass& p, const LayerOf& l, float* attention,
                                                          const float* x) {
                        if (l.index != 1) shipped(p, l, attention, x);
                      };
                    })});

}  // namespace lenscheck::mutation
