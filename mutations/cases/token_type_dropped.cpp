#include <algorithm>
#include <vector>

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
                    .run = runtime_fault([](Stages& s) {
                      s.embed = [](const Pass& p, const std::vector<int64_t>& ids, float* x) {
                        for (size_t tok = 0; tok < p.T; ++tok) {
                          const float* word = p.weights.word_embeddings.values.data() + size_t(ids[tok]) * p.D;
                          const float* pos = p.weights.position_embeddings.values.data() + tok * p.D;
                          for (size_t k = 0; k < p.D; ++k) x[tok * p.D + k] = word[k] + pos[k];
                        }
                      };
                    })});

}  // namespace lenscheck::mutation
