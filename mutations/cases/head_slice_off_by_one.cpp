#include <algorithm>

#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "head-slice-off-by-one",
                    .description = "every head reads its q, k, v slice one feature late",
                    .kind = Kind::implementation,
                    .run = runtime_fault([](Stages& s) {
                      s.project = [shipped = s.project](const Pass& p, const LayerOf& l, const float* x, float* q,
                                                        float* k, float* v) {
                        shipped(p, l, x, q, k, v);
                        for (float* m : {q, k, v})
                          for (size_t tok = 0; tok < p.T; ++tok)
                            std::rotate(m + tok * p.D, m + tok * p.D + 1, m + tok * p.D + p.D);
                      };
                    })});

}  // namespace lenscheck::mutation
