// The lens arithmetic (kernels.h: weight_by_key, summed_transformed_norm, l2_norm; runtime/lens.h):
// sums in double, in an order the code fixes.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

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

LENSCHECK_KERNEL
float l2_norm(const float* x, size_t n) {
  return static_cast<float>(std::sqrt(sum_of_products(x, x, n, 0.0)));
}

}  // namespace lenscheck::runtime
