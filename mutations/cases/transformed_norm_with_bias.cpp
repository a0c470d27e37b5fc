#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "transformed-norm-with-bias",
                    .description = "b_O included in f(x)",
                    .kind = Kind::implementation,
                    .run = runtime_fault([](Stages& s) {
                      s.transform_values = [](const Pass& p, const LayerOf& l, const float* v, float* fx) {
                        runtime::head_transform(v, p.T, p.H, p.Dh, l.packed.attention_out,
                                                l.w.attention_out_b.values.data(), fx, p.workers);
                      };
                    })});

}  // namespace lenscheck::mutation
