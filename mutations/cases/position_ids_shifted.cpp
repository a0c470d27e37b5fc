#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "mutations/mutation.h"

namespace lenscheck::mutation {

// Token t reads position t + 1: where those rows of the table are identical, nothing changes.
LENSCHECK_MUTATION({.name = "position-ids-shifted",
                    .description = "position ids start at 1 instead of 0",
                    .kind = Kind::implementation,
                    .equivalence = equivalent_where(
                        "position embeddings of rows 0 … T identical for the longest sentence's T tokens",
                        [](const Context& ctx) {
                          size_t T = 0;
                          for (const SentenceRun& run : ctx.runs) T = std::max(T, run.encoding.ids.size());
                          const Param& p = ctx.checkpoint.weights.position_embeddings;
                          const size_t D = size_t(ctx.checkpoint.config.hidden_size), rows = size_t(p.shape.at(0));
                          for (size_t t = 0; t < T && t + 1 < rows; ++t)
                            if (std::memcmp(&p.values[t * D], &p.values[(t + 1) * D], D * sizeof(float)) != 0) return false;
                          return T < rows;
                        }),
                    .run = runtime_fault([](Stages& s) {
                      s.embed = [](const Pass& p, const std::vector<int64_t>& ids, float* x) {
                        if (p.T + 1 > size_t(p.config.max_position_embeddings))
                          throw std::invalid_argument("sequence length outside 1..max_position_embeddings - 1");
                        const float* type0 = p.weights.token_type_embeddings.values.data();
                        for (size_t tok = 0; tok < p.T; ++tok) {
                          const float* word = p.weights.word_embeddings.values.data() + size_t(ids[tok]) * p.D;
                          const float* pos = p.weights.position_embeddings.values.data() + (tok + 1) * p.D;
                          for (size_t k = 0; k < p.D; ++k) x[tok * p.D + k] = word[k] + pos[k] + type0[k];
                        }
                      };
                    })});

}  // namespace lenscheck::mutation
