#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "drop-score-scale",
                    .description = "attention scores not divided by sqrt(d_h)",
                    .kind = Kind::implementation,
                    .run = runtime_fault([](Stages& s) {
                      s.attend = [](const Pass& p, const LayerOf&, const float* q, const float* k, const float* v,
                                    float* probs, float* raw_scores, float* context) {
                        runtime::attention(q, k, v, p.T, p.H, p.Dh, 1.0f, probs, raw_scores, context, p.workers);
                      };
                    })});

}  // namespace lenscheck::mutation
