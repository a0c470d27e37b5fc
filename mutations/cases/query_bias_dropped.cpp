#include <algorithm>

#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "query-bias-dropped",
                    .description = "b_Q dropped in layer 0",
                    .kind = Kind::implementation,
                    .run = weights_fault([](BertWeights& w) {
                      auto& b = w.layers.at(0).query_b.values;
                      std::fill(b.begin(), b.end(), 0.0f);
                    })});

}  // namespace lenscheck::mutation
