#include <algorithm>

#include "mutations/mutation.h"

namespace lenscheck::mutation {

// Every sentence is of token type 0; x + 0 = x, so a zero row 0 adds nothing to drop.
LENSCHECK_MUTATION({.name = "token-type-dropped",
                    .description = "token type embedding dropped",
                    .kind = Kind::implementation,
                    .equivalence = equivalent_where("token type embedding 0 all zeros",
                                                    [](const Context& ctx) {
                                                      const Param& p = ctx.checkpoint.weights.token_type_embeddings;
                                                      const auto row = p.values.begin();
                                                      return std::all_of(row, row + ctx.checkpoint.config.hidden_size,
                                                                         [](float x) { return x == 0.0f; });
                                                    }),
                    .run = runtime_fault(runtime::Fault::token_type_dropped)});

}  // namespace lenscheck::mutation
