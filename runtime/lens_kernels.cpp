// The lens arithmetic (kernels.h: weight_by_key, summed_transformed_norm, residual_lenses, l2_norm;
// runtime/lens.h):
// sums in double, in an order the code fixes.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

#include "model/error.h"
#include "runtime/kernels.h"
#include "runtime/simd.h"

namespace lenscheck::runtime {

using namespace simd;

namespace {

// ---- Sums in double ------------------------------------------------------------------------
// Four lanes: lane j adds the terms i ≡ j (mod 4) in ascending i; then (l0 + l1) + (l2 + l3).

// sum_i (x_i - c) (y_i - c): a dot product with c = 0, a sum of squared deviations with x = y.
LENSCHECK_INLINE double sum_of_products(const float* x, const float* y, size_t n, double c) {
  const d4 cv = splat(c);
  d4 s = {};
  size_t i = 0;
  for (; i + 4 <= n; i += 4) s += (widen(x + i) - cv) * (widen(y + i) - cv);
  for (; i < n; ++i) s[i % 4] += (static_cast<double>(x[i]) - c) * (static_cast<double>(y[i]) - c);
  return lane_total(s);
}

// sqrt(sum_h p_h sum_g p_g gram_hg) for `width` <= 4 keys; p[h * keys], gram[(h * H + g) * keys].
LENSCHECK_INLINE void head_summed_norms(const float* p, const double* gram, size_t H, size_t keys,
                                        float* out, size_t width) {
  d4 sum = {};
  for (size_t h = 0; h < H; ++h) {
    d4 inner = {};
    for (size_t g = 0; g < H; ++g)
      inner += widen(p + g * keys) * load<d4>(gram + (h * H + g) * keys);
    sum += widen(p + h * keys) * inner;
  }
  for (size_t j = 0; j < width; ++j) out[j] = static_cast<float>(std::sqrt(std::max(sum[j], 0.0)));
}

}  // namespace

LENSCHECK_KERNEL
void weight_by_key(const float* probs, const float* key_weight, size_t H, size_t T, float* out) {
  for (size_t h = 0; h < H; ++h)
    for (size_t a = 0; a < T; ++a)
      for (size_t b = 0; b < T; ++b)
        out[(h * T + a) * T + b] = probs[(h * T + a) * T + b] * key_weight[h * T + b];
}

// ||sum_h p_h f_h||² = sum_h p_h sum_g p_g <f_h, f_g>: the Gram matrix of each key's H vectors,
// once, then a quadratic form per query and key: O(T H² D + T² H²) rather than O(T² H D).
// All of it in double, so the only rounding to float is the last one.
LENSCHECK_KERNEL
void summed_transformed_norm(const float* probs, const float* fx, size_t H, size_t T, size_t D,
                             float* out) {
  const size_t keys = (T + 3) / 4 * 4;  // padded with zeros to whole vectors
  std::vector<double> gram(H * H * keys, 0.0);  // gram[(h * H + g) * keys + b]
  for (size_t b = 0; b < T; ++b)
    for (size_t h = 0; h < H; ++h)
      for (size_t g = 0; g <= h; ++g)
        gram[(h * H + g) * keys + b] = gram[(g * H + h) * keys + b] =
            sum_of_products(fx + (h * T + b) * D, fx + (g * T + b) * D, D, 0.0);
  std::vector<float> p(H * keys, 0.0f);  // one query's row of every head
  for (size_t a = 0; a < T; ++a) {
    for (size_t h = 0; h < H; ++h) std::copy_n(probs + (h * T + a) * T, T, &p[h * keys]);
    for (size_t b0 = 0; b0 < T; b0 += 4)
      head_summed_norms(p.data() + b0, gram.data() + b0, H, keys, out + a * T + b0,
                        std::min<size_t>(4, T - b0));
  }
}

namespace {

// The mean of n values, in double, summed in order.
template <typename T>
double mean_of(const T* v, size_t n) {
  double mean = 0;
  for (size_t d = 0; d < n; ++d) mean += double(v[d]);
  return mean / double(n);
}

// Population variance of n values, about their mean_of.
template <typename T>
double variance_of(const T* v, size_t n) {
  const double mean = mean_of(v, n);
  double var = 0;
  for (size_t d = 0; d < n; ++d) var += (double(v[d]) - mean) * (double(v[d]) - mean);
  return var / double(n);
}

// ‖v‖ and ‖γ ⊙ (v − mean v)‖ of n values.
std::pair<double, double> plain_and_centred_norms(const double* v, const float* gain, size_t n) {
  const double mean = mean_of(v, n);
  double plain = 0, centred = 0;
  for (size_t d = 0; d < n; ++d) {
    plain += v[d] * v[d];
    const double c = double(gain[d]) * (v[d] - mean);
    centred += c * c;
  }
  return {std::sqrt(plain), std::sqrt(centred)};
}

// a / (a + b) of two norms; 0 where both are 0 (nothing carried, so nothing mixed in).
double share(double a, double b) { return a + b > 0 ? a / (a + b) : 0.0; }

}  // namespace

// A clone per instruction set for the row sums below (element-wise in double: no order changes, and
// -ffp-contract=off fuses nothing, so every clone gives the same bits).
LENSCHECK_KERNEL
void residual_lenses(const float* probs, const float* fx, const float* x, const float* y, const float* gain, double eps,
                     size_t H, size_t T, size_t D, const ResidualLenses& out) {
  // Per key b and heads h, g: <f_h, f_g> and <γ ⊙ (f_h − mean f_h), γ ⊙ (f_g − mean f_g)>.
  std::vector<double> gram(T * H * H), centred_gram(T * H * H), centred(H * D);
  for (size_t b = 0; b < T; ++b) {
    for (size_t h = 0; h < H; ++h) {
      const float* f = fx + (h * T + b) * D;
      const double mean = mean_of(f, D);
      for (size_t d = 0; d < D; ++d) centred[h * D + d] = double(gain[d]) * (double(f[d]) - mean);
    }
    for (size_t h = 0; h < H; ++h)
      for (size_t g = 0; g <= h; ++g) {
        double plain = 0, c = 0;
        for (size_t d = 0; d < D; ++d) {
          plain += double(fx[(h * T + b) * D + d]) * double(fx[(g * T + b) * D + d]);
          c += centred[h * D + d] * centred[g * D + d];
        }
        gram[(b * H + h) * H + g] = gram[(b * H + g) * H + h] = plain;
        centred_gram[(b * H + h) * H + g] = centred_gram[(b * H + g) * H + h] = c;
      }
  }
  std::vector<double> diagonal(D), z(D), rest(D);
  for (size_t a = 0; a < T; ++a) {
    const double var = variance_of(y + a * D, D);
    // LayerNorm itself divides by this: a constant pre-LayerNorm state with ε = 0 has no LayerNorm'd lens.
    // A NaN state (a fault upstream) propagates, for the gate to fail as it fails every NaN.
    if (var + eps <= 0)
      throw NonFiniteError(fmt::format("token {}: the pre-LayerNorm state has variance {} and ε is {}, so its "
                                       "LayerNorm'd residual lens is undefined",
                                       a, var, eps));
    const double scale = 1.0 / std::sqrt(var + eps);
    for (size_t b = 0; b < T; ++b) {
      if (b == a) continue;
      double plain = 0, c = 0;
      for (size_t h = 0; h < H; ++h)
        for (size_t g = 0; g < H; ++g) {
          const double pp = double(probs[(h * T + a) * T + b]) * double(probs[(g * T + a) * T + b]);
          plain += pp * gram[(b * H + h) * H + g];
          c += pp * centred_gram[(b * H + h) * H + g];
        }
      if (out.residual_norm) out.residual_norm[a * T + b] = float(std::sqrt(std::max(plain, 0.0)));
      if (out.residual_layernorm_norm)
        out.residual_layernorm_norm[a * T + b] = float(std::sqrt(std::max(c, 0.0)) * scale);
    }
    // The token's own term, Σ_h α_hii f_h(x_i), with and without its residual, and the rest of the row,
    // summed term by term: read off y as y_i − b_O − z_ii, it would cancel where the own term dominates.
    std::fill(rest.begin(), rest.end(), 0.0);
    for (size_t h = 0; h < H; ++h)
      for (size_t b = 0; b < T; ++b) {
        if (b == a) continue;
        const double p = probs[(h * T + a) * T + b];
        const float* f = fx + (h * T + b) * D;
        for (size_t d = 0; d < D; ++d) rest[d] += p * double(f[d]);
      }
    for (size_t d = 0; d < D; ++d) {
      double t = 0;
      for (size_t h = 0; h < H; ++h) t += double(probs[(h * T + a) * T + a]) * double(fx[(h * T + a) * D + d]);
      diagonal[d] = t;
      z[d] = t + double(x[a * D + d]);
    }
    const double t_norm = plain_and_centred_norms(diagonal.data(), gain, D).first;
    const auto [z_norm, z_centred] = plain_and_centred_norms(z.data(), gain, D);
    const auto [rest_norm, rest_centred] = plain_and_centred_norms(rest.data(), gain, D);
    if (out.residual_norm) out.residual_norm[a * T + a] = float(z_norm);
    if (out.residual_layernorm_norm) out.residual_layernorm_norm[a * T + a] = float(z_centred * scale);
    if (out.ratio_attention) out.ratio_attention[a] = float(share(rest_norm, t_norm));
    if (out.ratio_residual) out.ratio_residual[a] = float(share(rest_norm, z_norm));
    // The scale 1 / sqrt(var y_i + ε) is common to both terms and cancels.
    if (out.ratio_residual_layernorm) out.ratio_residual_layernorm[a] = float(share(rest_centred, z_centred));
  }
}

LENSCHECK_KERNEL
float l2_norm(const float* x, size_t n) {
  return static_cast<float>(std::sqrt(sum_of_products(x, x, n, 0.0)));
}

}  // namespace lenscheck::runtime
