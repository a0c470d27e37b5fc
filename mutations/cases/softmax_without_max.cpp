#include <fmt/format.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <string>

#include "mutations/mutation.h"

namespace lenscheck::mutation {

namespace {

// exp(x - m) / sum exp(x - m) equals exp(x) / sum exp(x) in real arithmetic, and in fp32 too, to a few
// ULP, while no exp(x) and no row sum leaves fp32's normal range. Decided on the fp64 truth's scores:
// a row's log-sum-exp above log(FLT_MAX) overflows the sum (its probabilities turn 0 or NaN), a row
// whose largest score is below log(FLT_MIN) has no normal term (below log of the smallest subnormal,
// every term flushes to 0 and 0/0 is NaN). The margin of 1 (a factor e) stands far above the fp32
// error of a score (a few ULP of |s|: 1e-4 at |s| = 100) and decides nothing else.
constexpr double kMargin = 1.0;

Equivalence scores_within_exp_range(const Context& ctx) {
  const double top = std::log(double(FLT_MAX)), normal = std::log(double(FLT_MIN)),
               smallest = std::log(double(std::numeric_limits<float>::denorm_min()));
  double largest_lse = -INFINITY, lowest_max = INFINITY;
  std::string largest_at, lowest_at;
  for (const SentenceRun& run : ctx.runs)
    for (int l = 0; l < ctx.checkpoint.config.num_hidden_layers; ++l) {
      const Tensor& s = *run.references.truth->find(trace_name(l, LayerTensor::scores));
      const size_t H = size_t(s.shape[0]), T = size_t(s.shape[1]);
      for (size_t row = 0; row < H * T; ++row) {
        const double* x = s.values.data() + row * T;
        double m = -INFINITY, sum = 0;
        for (size_t j = 0; j < T; ++j) m = std::max(m, x[j]);
        for (size_t j = 0; j < T; ++j) sum += std::exp(x[j] - m);
        const double lse = m + std::log(sum);
        const std::string at = fmt::format("{} head {}.{} token {}", run.sentence.id, l, row / T, row % T);
        if (lse > largest_lse) largest_lse = lse, largest_at = at;
        if (m < lowest_max) lowest_max = m, lowest_at = at;
      }
    }
  const std::string figures =
      fmt::format("largest row log-sum-exp of the fp64 scores {:.4g} ({}) against log(FLT_MAX) = {:.4g}; lowest "
                  "row maximum {:.4g} ({}) against log(FLT_MIN) = {:.4g}; margin {:g}",
                  largest_lse, largest_at, top, lowest_max, lowest_at, normal, kMargin);
  if (largest_lse < top - kMargin && lowest_max > normal + kMargin)
    return {Equivalence::Verdict::equivalent, "every exp and row sum stays in fp32's normal range: " + figures};
  if (largest_lse > top + kMargin || lowest_max < smallest - kMargin)
    return {Equivalence::Verdict::ordinary, "exp overflows (or every term of a row underflows) in fp32: " + figures};
  return {Equivalence::Verdict::borderline, "a row lies within the margin of fp32's exp range: " + figures};
}

}  // namespace

LENSCHECK_MUTATION({.name = "softmax-without-max",
                    .description = "softmax without subtracting the row maximum",
                    .kind = Kind::implementation,
                    .equivalence = scores_within_exp_range,
                    .run = runtime_fault([](Stages& s) {
                      s.attend = runtime::attend_with([](const Pass& p, const LayerOf&, float* scores) {
                        const size_t rows = p.H * p.T, T = p.T;
                        for (size_t e = 0; e < rows * T; ++e) scores[e] = std::exp(scores[e]);
                        for (size_t r = 0; r < rows; ++r) {
                          float sum = 0;
                          for (size_t c = 0; c < T; ++c) sum += scores[r * T + c];
                          for (size_t c = 0; c < T; ++c) scores[r * T + c] /= sum;
                        }
                      });
                    })});

}  // namespace lenscheck::mutation
