#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

#include "mutations/mutation.h"
#include "mutations/residual_lens_terms.h"

namespace lenscheck::mutation {

namespace {

// z_ij of layer l from the fp64 truth: Σ_h α_hij v_hj W_O[h]ᵀ + δ_ij x_i, [T, T, D].
std::vector<double> truth_z(const Context& ctx, const Trace& truth, int l) {
  const BertConfig& c = ctx.checkpoint.config;
  const size_t H = size_t(c.num_attention_heads), D = size_t(c.hidden_size), Dh = D / H;
  const Tensor& probs = *truth.find(trace_name(l, LayerTensor::probs));
  const Tensor& v = *truth.find(trace_name(l, LayerTensor::value));
  const Tensor& x = *truth.find(l == 0 ? kEmbeddingsOutput : trace_name(l - 1, LayerTensor::output));
  const std::vector<float>& wo = ctx.checkpoint.weights.layers[size_t(l)].attention_out_w.values;  // [D, D]
  const size_t T = size_t(x.shape[0]);
  std::vector<double> f(H * T * D, 0.0);
  for (size_t h = 0; h < H; ++h)
    for (size_t j = 0; j < T; ++j)
      for (size_t d = 0; d < D; ++d)
        for (size_t e = 0; e < Dh; ++e) f[(h * T + j) * D + d] += v.values[(h * T + j) * Dh + e] * double(wo[d * D + h * Dh + e]);
  return residual_lens_vectors(probs.values.data(), f.data(), x.values.data(), H, T, D);
}

// The mutant moves element [i, j] by ‖γ ⊙ (z_ij − mean)‖ · |1/sqrt(var z_ij + ε) − 1/sqrt(var y_i + ε)|:
// nothing where z_ij is constant across features (a planted model's off-diagonal terms) or has y_i's
// variance. Decided on the fp64 truth, each move against |truth| + rms(truth) as the gate weighs it:
// below 2^-25 (a quarter of fp32's spacing) the mutant computes the same lens, above 2^-17 (four times
// k = 16 steps of fp32) the gate must see it, between, fp32's rounding decides.
Equivalence own_variance_moves_nothing(const Context& ctx) {
  const BertConfig& c = ctx.checkpoint.config;
  const size_t D = size_t(c.hidden_size);
  double largest = 0;
  std::string at;
  for (const SentenceRun& run : ctx.runs)
    for (int l = 0; l < c.num_hidden_layers; ++l) {
      const Trace& truth = *run.references.truth;
      const Tensor& y = *truth.find(trace_name(l, LayerTensor::attention_pre_norm));
      const Tensor& lens = *truth.find(trace_name(l, LayerTensor::lens_residual_layernorm_norm));
      const std::vector<float>& gain = ctx.checkpoint.weights.layers[size_t(l)].attention_ln_g.values;
      const size_t T = size_t(y.shape[0]);
      double rms = 0;
      for (double e : lens.values) rms += e * e / double(lens.values.size());
      rms = std::sqrt(rms);
      const std::vector<double> z = truth_z(ctx, truth, l);
      for (size_t i = 0; i < T; ++i) {
        const double var_y = mean_and_variance(y.values.data() + i * D, D).second;
        for (size_t j = 0; j < T; ++j) {
          const double* zij = z.data() + (i * T + j) * D;
          const auto [mean, var_z] = mean_and_variance(zij, D);
          double centred = 0;
          for (size_t d = 0; d < D; ++d) centred += std::pow(double(gain[d]) * (zij[d] - mean), 2);
          const double move = std::sqrt(centred) * std::abs(1 / std::sqrt(var_z + c.layer_norm_eps) -
                                                            1 / std::sqrt(var_y + c.layer_norm_eps)) /
                              (std::abs(lens.values[i * T + j]) + rms);
          if (move > largest) largest = move, at = fmt::format("{} layer {} [{}, {}]", run.sentence.id, l, i, j);
        }
      }
    }
  const std::string figures = fmt::format("largest move {:.3g} of |truth| + rms ({})", largest, at.empty() ? "none" : at);
  if (largest < 0x1p-25) return {Equivalence::Verdict::equivalent, "no z_ij's own variance moves the lens: " + figures};
  if (largest > 0x1p-17) return {Equivalence::Verdict::ordinary, "z_ij's own variance moves the lens: " + figures};
  return {Equivalence::Verdict::borderline, "z_ij's own variance moves the lens by about a rounding: " + figures};
}

}  // namespace

// Kobayashi et al. 2021 divide every z_ij by the real pre-LayerNorm state's deviation sqrt(var y_i + ε),
// which LayerNorm applies to the token's whole sum; dividing each z_ij by its own deviation instead makes
// every vector's norm about ‖γ‖, whatever it carries.
LENSCHECK_MUTATION({.name = "residual-lens-variance-of-z",
                    .description = "the LayerNorm'd residual lens scales z_ij by its own variance, not y_i's",
                    .kind = Kind::implementation,
                    .equivalence = own_variance_moves_nothing,
                    .run = runtime_fault([](Stages& s) {
                      s.residual_lenses = [shipped = s.residual_lenses](const Pass& p, const LayerOf& l,
                                                                        const float* probs, const float* fx,
                                                                        const float* x, const float* y,
                                                                        const runtime::ResidualLenses& out) {
                        shipped(p, l, probs, fx, x, y, out);
                        if (!out.residual_layernorm_norm) return;
                        const float* gain = l.w.attention_ln_g.values.data();
                        const std::vector<double> z = residual_lens_vectors(probs, fx, x, p.H, p.T, p.D);
                        for (size_t i = 0; i < p.T; ++i)
                          for (size_t j = 0; j < p.T; ++j) {
                            const double* zij = z.data() + (i * p.T + j) * p.D;
                            const auto [mean, var] = mean_and_variance(zij, p.D);
                            double norm = 0;
                            for (size_t d = 0; d < p.D; ++d) norm += std::pow(double(gain[d]) * (zij[d] - mean), 2);
                            out.residual_layernorm_norm[i * p.T + j] =
                                float(std::sqrt(norm) / std::sqrt(var + p.config.layer_norm_eps));
                          }
                      };
                    })});

}  // namespace lenscheck::mutation
