#include <algorithm>
#include <cstring>

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
                    .run = runtime_fault(runtime::Fault::position_ids_shifted)});

}  // namespace lenscheck::mutation
