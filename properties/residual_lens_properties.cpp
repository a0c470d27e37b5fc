// Properties of the residual lens (Kobayashi et al. 2021; runtime/kernels.h residual_lenses) on random
// models with trained statistics. The inputs the shipped stage receives in a real forward (probs, f(x),
// the layer's input x and pre-LayerNorm state y) are captured, and the lens's vectors
// z_ij = Σ_h α_hij f_h(x_j) + δ_ij x_i rebuilt from them in double, term by term.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "model/error.h"
#include "mutations/residual_lens_terms.h"
#include "oracle/oracle.h"
#include "properties/generators.h"
#include "runtime/encoder.h"

namespace lenscheck {
namespace {

// What one layer's residual_lenses stage received and gave in a forward.
struct Captured {
  size_t H = 0, T = 0, D = 0, Dh = 0;
  std::vector<float> probs, fx, x, y;
};

struct Forward {
  BertConfig config;
  BertWeights weights;
  Trace trace;
  Captured layer;  // the captured stage of one layer
  int index = 0;
};

Forward forward(bool zero_biases_unit_gains) {
  Forward f;
  f.config = *prop::small_config(4);
  f.weights = prop::random_weights(f.config, *rc::gen::arbitrary<uint64_t>(), *prop::trained_statistics());
  if (zero_biases_unit_gains)
    for (LayerWeights& L : f.weights.layers) {
      std::fill(L.attention_out_b.values.begin(), L.attention_out_b.values.end(), 0.0f);
      std::fill(L.attention_ln_b.values.begin(), L.attention_ln_b.values.end(), 0.0f);
      std::fill(L.attention_ln_g.values.begin(), L.attention_ln_g.values.end(), 1.0f);
    }
  const Encoding input = *prop::token_sequence(f.config);
  f.index = *rc::gen::inRange(0, f.config.num_hidden_layers);
  runtime::Stages stages = runtime::shipped_stages();
  Captured& c = f.layer;
  stages.residual_lenses = [&c, layer = size_t(f.index), shipped = stages.residual_lenses](
                               const runtime::Pass& p, const runtime::LayerOf& l, const float* probs,
                               const float* fx, const float* x, const float* y, const runtime::ResidualLenses& out) {
    shipped(p, l, probs, fx, x, y, out);
    if (l.index != layer) return;
    c.H = p.H, c.T = p.T, c.D = p.D, c.Dh = p.Dh;
    c.probs.assign(probs, probs + p.H * p.T * p.T);
    c.fx.assign(fx, fx + p.H * p.T * p.D);
    c.x.assign(x, x + p.T * p.D);
    c.y.assign(y, y + p.T * p.D);
  };
  f.trace = runtime::Encoder(f.config, f.weights, 1, stages).forward(input);
  return f;
}

// z_ij of the captured layer, in double, [T, T, D].
std::vector<double> z_of(const Captured& c) {
  return residual_lens_vectors(c.probs.data(), c.fx.data(), c.x.data(), c.H, c.T, c.D);
}

// Higham's γ_n = n u / (1 − n u) of fp32: the relative forward error bound of a sum of n products.
double gamma(size_t n) { return double(n) * 0x1p-24 / (1 - double(n) * 0x1p-24); }

// M_i[d] = Σ_j Σ_h α_hij Σ_e |v_hje| |W_O[d, h Dh + e]| + |x_i[d]| + |b_O[d]|: the magnitudes whose
// rounding both routes to y_i (context · W_O, and f(x) per head) accumulate.
std::vector<double> magnitudes(const Forward& f, size_t i) {
  const Captured& c = f.layer;
  const Tensor& v = *f.trace.find(trace_name(f.index, LayerTensor::value));  // [H, T, Dh]
  const LayerWeights& w = f.weights.layers[size_t(f.index)];
  std::vector<double> m(c.D);
  for (size_t d = 0; d < c.D; ++d) {
    m[d] = std::abs(double(c.x[i * c.D + d])) + std::abs(double(w.attention_out_b.values[d]));
    for (size_t h = 0; h < c.H; ++h)
      for (size_t j = 0; j < c.T; ++j) {
        double carried = 0;
        for (size_t e = 0; e < c.Dh; ++e)
          carried += std::abs(v.values[(h * c.T + j) * c.Dh + e]) *
                     std::abs(double(w.attention_out_w.values[d * c.D + h * c.Dh + e]));
        m[d] += double(c.probs[(h * c.T + i) * c.T + j]) * carried;
      }
  }
  return m;
}

}  // namespace

// Σ_j z_ij + b_O = y_i: the lens's vectors, built from f(x) head by head, account for the whole of the
// real pre-LayerNorm state, which the forward computes through the context and W_O; each element within
// γ_n of its magnitudes, n = D + T + Dh + 2 (the longest chain of roundings between them).
RC_GTEST_PROP(ResidualLensProperties, TheDecompositionIsCompleteUpToTheBiasOfTheOutputProjection, ()) {
  const Forward f = forward(false);
  const Captured& c = f.layer;
  const LayerWeights& w = f.weights.layers[size_t(f.index)];
  const double g = gamma(c.D + c.T + c.Dh + 2);
  const std::vector<double> z = z_of(c);
  for (size_t i = 0; i < c.T; ++i) {
    std::vector<double> sum(c.D);
    for (size_t d = 0; d < c.D; ++d) sum[d] = double(w.attention_out_b.values[d]);
    for (size_t j = 0; j < c.T; ++j)
      for (size_t d = 0; d < c.D; ++d) sum[d] += z[(i * c.T + j) * c.D + d];
    const std::vector<double> m = magnitudes(f, i);
    for (size_t d = 0; d < c.D; ++d)
      if (!(std::abs(sum[d] - double(c.y[i * c.D + d])) <= g * m[d]))
        RC_FAIL(fmt::format("layer {} token {} feature {}: Σ_j z_ij + b_O = {:.9g}, y_i = {:.9g}, bound {:.3g}",
                            f.index, i, d, sum[d], c.y[i * c.D + d], g * m[d]));
  }
}

// With b_O = 0, β = 0 and γ = 1 the LayerNorm'd vectors γ ⊙ (z_ij − mean z_ij) / sqrt(var y_i + ε) sum to
// the attention LayerNorm's output itself; the bound is the decomposition's, through the normalisation
// (the mean couples the features: twice the largest, over sqrt(var y_i + ε)), plus the output's own
// rounding (two units of fp32).
RC_GTEST_PROP(ResidualLensProperties, WithZeroBiasesAndUnitGainsTheLayerNormedVectorsSumToTheLayerNormsOutput, ()) {
  const Forward f = forward(true);
  const Captured& c = f.layer;
  const Tensor& output = *f.trace.find(trace_name(f.index, LayerTensor::attention_output));  // [T, D]
  const double g = gamma(c.D + c.T + c.Dh + 2);
  const std::vector<double> z = z_of(c);
  for (size_t i = 0; i < c.T; ++i) {
    const std::vector<double> yi(c.y.begin() + long(i * c.D), c.y.begin() + long((i + 1) * c.D));
    const double scale = 1 / std::sqrt(mean_and_variance(yi.data(), c.D).second + f.config.layer_norm_eps);
    std::vector<double> sum(c.D, 0.0);
    for (size_t j = 0; j < c.T; ++j) {
      const double* zij = z.data() + (i * c.T + j) * c.D;
      const double mean = mean_and_variance(zij, c.D).first;
      for (size_t d = 0; d < c.D; ++d) sum[d] += (zij[d] - mean) * scale;
    }
    const std::vector<double> m = magnitudes(f, i);
    const double coupled = 2 * g * *std::max_element(m.begin(), m.end()) * scale;
    for (size_t d = 0; d < c.D; ++d) {
      const double out = output.values[i * c.D + d];
      if (!(std::abs(sum[d] - out) <= coupled + 2 * 0x1p-24 * std::abs(out)))
        RC_FAIL(fmt::format("layer {} token {} feature {}: Σ_j g_i(z_ij) = {:.9g}, LayerNorm output {:.9g}, bound {:.3g}",
                            f.index, i, d, sum[d], out, coupled + 2 * 0x1p-24 * std::abs(out)));
    }
  }
}

// A mixing ratio is a share of two norms: in [0, 1] in the runtime and in the fp64 oracle alike.
RC_GTEST_PROP(ResidualLensProperties, EveryMixingRatioLiesInZeroToOneInTheRuntimeAndTheOracle, ()) {
  const Forward f = forward(false);
  const Encoding input{f.trace.input_ids, f.trace.tokens, f.trace.word_ids, {}};
  oracle::Oracle::set_threads(1);  // so that a failure reproduces from its seed
  const Trace truth = oracle::Oracle(f.config, f.weights, oracle::Precision::fp64).forward(input);
  for (const Trace* trace : {&f.trace, &truth})
    for (int l = 0; l < f.config.num_hidden_layers; ++l)
      for (LayerTensor t : {LayerTensor::mixing_ratio_attention, LayerTensor::mixing_ratio_residual,
                            LayerTensor::mixing_ratio_residual_layernorm})
        for (double r : trace->find(trace_name(l, t))->values)
          if (!(r >= 0 && r <= 1)) RC_FAIL(fmt::format("{}: {} = {}", trace->producer, trace_name(l, t), r));
}

// Scaling f(x), x and y by 2^k scales every z_ij by 2^k exactly: the residual norms scale by 2^k (where
// they are normal fp32 numbers: a subnormal one keeps fewer bits) and the three mixing ratios, shares of
// norms computed in double, stay the same bits.
RC_GTEST_PROP(ResidualLensProperties, ScalingTheVectorsByAPowerOfTwoLeavesTheMixingRatiosBitForBit, ()) {
  const Forward f = forward(false);
  const Captured& c = f.layer;
  const int k = *rc::gen::inRange(-8, 9);
  const float s = std::ldexp(1.0f, k);
  auto lenses = [&](float factor) {
    auto scaled = [&](const std::vector<float>& v) {
      std::vector<float> r(v);
      for (float& e : r) e *= factor;
      return r;
    };
    const std::vector<float> fx = scaled(c.fx), x = scaled(c.x), y = scaled(c.y);
    std::vector<float> norm(c.T * c.T), ln(c.T * c.T), ratios(3 * c.T);
    runtime::residual_lenses(c.probs.data(), fx.data(), x.data(), y.data(),
                             f.weights.layers[size_t(f.index)].attention_ln_g.values.data(), f.config.layer_norm_eps,
                             c.H, c.T, c.D, {norm.data(), ln.data(), ratios.data(), ratios.data() + c.T, ratios.data() + 2 * c.T});
    return std::pair{norm, ratios};
  };
  const auto [norm, ratios] = lenses(1.0f);
  const auto [norm_scaled, ratios_scaled] = lenses(s);
  for (size_t e = 0; e < ratios.size(); ++e)
    if (!prop::same_bits(ratios[e], ratios_scaled[e]))
      RC_FAIL(fmt::format("ratio {} of token {}: {} unscaled, {} with f(x), x and y times 2^{}", e / c.T, e % c.T,
                          ratios[e], ratios_scaled[e], k));
  for (size_t e = 0; e < norm.size(); ++e)
    if (std::min(norm[e], norm_scaled[e]) >= FLT_MIN && !prop::same_bits(norm[e] * s, norm_scaled[e]))
      RC_FAIL(fmt::format("residual norm [{}, {}]: {} unscaled, {} with f(x), x and y times 2^{}", e / c.T, e % c.T,
                          norm[e], norm_scaled[e], k));
}

// LayerNorm divides by sqrt(var y_i + ε): with ε = 0 a constant pre-LayerNorm state leaves the LayerNorm'd
// lens undefined, which is an error naming the layer and token, not a NaN in a report.
TEST(ResidualLens, AConstantPreLayerNormStateWithoutEpsilonIsAnErrorNamingTheLayerAndToken) {
  BertConfig config;
  config.hidden_size = 8, config.num_attention_heads = 2, config.num_hidden_layers = 1, config.intermediate_size = 4;
  config.vocab_size = 10, config.max_position_embeddings = 8, config.type_vocab_size = 1, config.layer_norm_eps = 0;
  const size_t H = 2, T = 3, D = 8;
  std::vector<float> probs(H * T * T, 1.0f / 3), fx(H * T * D, 0.5f), x(T * D, 1.0f), y(T * D, 2.0f);
  for (size_t d = 0; d < D; ++d) y[D + d] = float(d);  // token 1 varies, tokens 0 and 2 are constant
  std::vector<float> out(T * T);
  BertWeights weights = prop::random_weights(config, 1);
  const runtime::PackedLayer packed;
  const runtime::Pass pass{T, D, H, D / H, 4, config, weights, runtime::one_thread()};
  runtime::ResidualLenses lens;
  lens.residual_layernorm_norm = out.data();
  try {
    runtime::shipped_stages().residual_lenses(pass, {0, 1, weights.layers[0], packed}, probs.data(), fx.data(),
                                               x.data(), y.data(), lens);
    FAIL() << "a zero variance without ε gave a lens";
  } catch (const NonFiniteError& e) {
    EXPECT_STREQ(e.what(), "layer 0, token 0: the pre-LayerNorm state has variance 0 and ε is 0, so its LayerNorm'd "
                           "residual lens is undefined");
  }
}

}  // namespace lenscheck
