#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "transposed-output-slice",
                    .description = "f(x) through the head's slice of W_O transposed",
                    .kind = Kind::implementation,
                    .run = runtime_fault([](Stages& s) {
                      s.transform_values = [](const Pass& p, const LayerOf& l, const float* v, float* fx) {
                        // W_O read as if it were W_O^T: the torch weight [out, in] packed as [in, out] unchanged.
                        const runtime::PackedWeight untransposed =
                            runtime::pack_weight(l.w.attention_out_w.values.data(), p.D, p.D);
                        runtime::head_transform(v, p.T, p.H, p.Dh, untransposed, nullptr, fx, p.workers);
                      };
                    })});

}  // namespace lenscheck::mutation
