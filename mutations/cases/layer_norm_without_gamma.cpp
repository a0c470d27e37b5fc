#include <algorithm>

#include "mutations/mutation.h"

namespace lenscheck::mutation {

namespace {

bool all_ones(const Param& p) {
  return std::all_of(p.values.begin(), p.values.end(), [](float g) { return g == 1.0f; });
}

}  // namespace

// x · 1 = x in IEEE arithmetic: where every gain is 1 the mutant computes the same bits.
LENSCHECK_MUTATION({.name = "layer-norm-without-gamma",
                    .description = "LayerNorm without its scale gamma",
                    .kind = Kind::implementation,
                    .equivalence = equivalent_where("every LayerNorm gain exactly 1",
                                                    [](const Context& ctx) {
                                                      const BertWeights& w = ctx.checkpoint.weights;
                                                      return all_ones(w.embeddings_ln_g) &&
                                                             std::all_of(w.layers.begin(), w.layers.end(), [](const LayerWeights& l) {
                                                               return all_ones(l.attention_ln_g) && all_ones(l.output_ln_g);
                                                             });
                                                    }),
                    .run = runtime_fault([](Stages& s) {
                      s.layer_norm = [shipped = s.layer_norm](const Pass& p, float* x, const Param&, const Param& bias) {
                        Param ones;
                        ones.values.assign(p.D, 1.0f);
                        shipped(p, x, ones, bias);
                      };
                    })});

}  // namespace lenscheck::mutation
