#include <algorithm>
#include <cstring>

#include "mutations/mutation.h"

namespace lenscheck::mutation {

namespace {

// Every row of W_out and every element of b_out the same: the FFN output is then one number repeated
// over the hidden axis, however it rounds, and the LayerNorm after it subtracts its mean, removing it
// up to the rounding of x + c. Such a layer carries nothing for a precision fault to change.
bool constant_ffn_outputs(const Context& ctx) {
  const size_t I = size_t(ctx.checkpoint.config.intermediate_size);
  for (const LayerWeights& l : ctx.checkpoint.weights.layers) {
    const std::vector<float>& w = l.output_w.values;
    for (size_t row = 1; row * I < w.size(); ++row)
      if (std::memcmp(&w[0], &w[row * I], I * sizeof(float)) != 0) return false;
    const std::vector<float>& b = l.output_b.values;
    if (!std::all_of(b.begin(), b.end(), [&](float x) { return x == b.front(); })) return false;
  }
  return true;
}

}  // namespace

LENSCHECK_MUTATION({.name = "half-precision-ffn-output",
                    .description = "the FFN output matmul accumulates in fp16",
                    .kind = Kind::implementation,
                    .equivalence = equivalent_where(
                        "every FFN output the same over the hidden axis (identical rows of W_out, constant "
                        "b_out), which the next LayerNorm removes",
                        constant_ffn_outputs),
                    .run = runtime_fault([](Stages& s) {
                      s.ffn_output = [](const Pass& p, const LayerOf& l, const float* intermediate, float* out) {
                        const float *w = l.w.output_w.values.data(), *b = l.w.output_b.values.data();  // w: [D, I]
                        for (size_t r = 0; r < p.T; ++r)
                          for (size_t o = 0; o < p.D; ++o) {
                            _Float16 acc = static_cast<_Float16>(b[o]);
                            for (size_t i = 0; i < p.I; ++i)
                              acc = static_cast<_Float16>(float(acc) + intermediate[r * p.I + i] * w[o * p.I + i]);
                            out[r * p.D + o] = float(acc);
                          }
                      };
                    })});

}  // namespace lenscheck::mutation
