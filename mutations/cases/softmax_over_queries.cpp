#include <algorithm>
#include <cmath>

#include "mutations/mutation.h"

namespace lenscheck::mutation {

namespace {

// Each key's column of each head normalised over the queries.
void softmax_over_queries(const Pass& p, const LayerOf&, float* scores) {
  const size_t T = p.T;
  for (size_t h = 0; h < p.H; ++h)
    for (size_t b = 0; b < T; ++b) {
      float* s = scores + h * T * T + b;
      float max = s[0];
      for (size_t a = 1; a < T; ++a) max = std::max(max, s[a * T]);
      float sum = 0;
      for (size_t a = 0; a < T; ++a) sum += (s[a * T] = std::exp(s[a * T] - max));
      for (size_t a = 0; a < T; ++a) s[a * T] /= sum;
    }
}

}  // namespace

LENSCHECK_MUTATION({.name = "softmax-over-queries",
                    .description = "softmax over the query axis instead of the key axis",
                    .kind = Kind::implementation,
                    .run = runtime_fault([](Stages& s) { s.attend = runtime::attend_with(softmax_over_queries); })});

}  // namespace lenscheck::mutation
