#include <algorithm>
#include <vector>

#include "mutations/mutation.h"

namespace lenscheck::mutation {

// x · 1 = x in IEEE arithmetic: where every attention LayerNorm gain is 1 the mutant computes the same
// bits (an init-scale model's), elsewhere the LayerNorm'd norms and ratio must move.
LENSCHECK_MUTATION({.name = "residual-lens-gain-one",
                    .description = "the residual lens's LayerNorm'd vectors without the gain γ",
                    .kind = Kind::implementation,
                    .equivalence = equivalent_where("every attention LayerNorm gain exactly 1",
                                                    [](const Context& ctx) {
                                                      const auto& layers = ctx.checkpoint.weights.layers;
                                                      return std::all_of(layers.begin(), layers.end(), [](const LayerWeights& l) {
                                                        const auto& g = l.attention_ln_g.values;
                                                        return std::all_of(g.begin(), g.end(), [](float v) { return v == 1.0f; });
                                                      });
                                                    }),
                    .run = runtime_fault([](Stages& s) {
                      s.residual_lenses = [](const Pass& p, const LayerOf&, const float* probs, const float* fx,
                                             const float* x, const float* y, const runtime::ResidualLenses& out) {
                        const std::vector<float> ones(p.D, 1.0f);
                        runtime::residual_lenses(probs, fx, x, y, ones.data(), p.config.layer_norm_eps, p.H, p.T,
                                                 p.D, out);
                      };
                    })});

}  // namespace lenscheck::mutation
