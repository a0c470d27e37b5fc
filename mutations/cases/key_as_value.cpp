#include <algorithm>

#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "key-as-value",
                    .description = "K used where V belongs",
                    .kind = Kind::implementation,
                    .run = runtime_fault([](Stages& s) {
                      s.project = [shipped = s.project](const Pass& p, const LayerOf& l, const float* x, float* q,
                                                        float* k, float* v) {
                        shipped(p, l, x, q, k, v);
                        std::copy_n(k, p.T * p.D, v);
                      };
                    })});

}  // namespace lenscheck::mutation
