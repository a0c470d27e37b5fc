#include <fmt/format.h>

#include <cmath>
#include <string>

#include "mutations/mutation.h"
#include "mutations/residual_lens_terms.h"

namespace lenscheck::mutation {

namespace {

// Without ε the LayerNorm'd residual lens divides by sqrt(var y_i) for sqrt(var y_i + ε): a relative shift
// of about ε / (2 var y_i) in every element of a row. Decided on the fp64 truth's attention.pre_norm: below
// 2^-25, a quarter of fp32's relative spacing, the rounded lens is the same up to a last-bit tie, which the
// gate accepts; above 2^-17, four times k = 16 steps of fp32, the gate must see it; between, fp32's
// rounding decides.
Equivalence eps_negligible(const Context& ctx) {
  const BertConfig& c = ctx.checkpoint.config;
  const size_t D = size_t(c.hidden_size);
  double smallest = INFINITY;
  std::string at;
  for (const SentenceRun& run : ctx.runs)
    for (int l = 0; l < c.num_hidden_layers; ++l) {
      const Tensor& y = *run.references.truth->find(trace_name(l, LayerTensor::attention_pre_norm));  // [T, D]
      for (size_t i = 0; i < size_t(y.shape[0]); ++i) {
        const double var = mean_and_variance(y.values.data() + i * D, D).second;
        if (var < smallest) smallest = var, at = fmt::format("{} layer {} token {}", run.sentence.id, l, i);
      }
    }
  const double shift = c.layer_norm_eps / (2 * smallest);
  const std::string figures = fmt::format("ε {:g} against the smallest var y_i {:.4g} ({}): relative shift {:.3g}",
                                          c.layer_norm_eps, smallest, at, shift);
  if (shift < 0x1p-25) return {Equivalence::Verdict::equivalent, "ε is negligible beside every variance: " + figures};
  if (shift > 0x1p-17) return {Equivalence::Verdict::ordinary, "ε moves the lens past the gate's bound: " + figures};
  return {Equivalence::Verdict::borderline, "ε moves the lens by about the gate's bound: " + figures};
}

}  // namespace

LENSCHECK_MUTATION({.name = "residual-lens-eps-omitted",
                    .description = "the LayerNorm'd residual lens divides by sqrt(var y_i), without ε",
                    .kind = Kind::implementation,
                    .equivalence = eps_negligible,
                    .run = runtime_fault([](Stages& s) {
                      s.residual_lenses = [](const Pass& p, const LayerOf& l, const float* probs, const float* fx,
                                             const float* x, const float* y, const runtime::ResidualLenses& out) {
                        runtime::residual_lenses(probs, fx, x, y, l.w.attention_ln_g.values.data(), 0.0, p.H, p.T,
                                                 p.D, out);
                      };
                    })});

}  // namespace lenscheck::mutation
