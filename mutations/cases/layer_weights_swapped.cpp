#include <utility>

#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "layer-weights-swapped",
                    .description = "layers 1 and 2 load each other's weights",
                    .kind = Kind::implementation,
                    .run = weights_fault([](BertWeights& w) { std::swap(w.layers.at(1), w.layers.at(2)); })});

}  // namespace lenscheck::mutation
