#pragma once
// The residual lens's terms in double (Kobayashi et al. 2021; runtime/kernels.h residual_lenses), from
// one layer's α [H, T, T], f(x) [H, T, D] and input x [T, D]: what the mutation cases decide equivalence
// on, and what the properties rebuild the runtime's lens from, term by term.
#include <cstddef>
#include <utility>
#include <vector>

namespace lenscheck {

// The mean and variance of n values, the variance biased (over n) as LayerNorm's is.
inline std::pair<double, double> mean_and_variance(const double* v, size_t n) {
  double mean = 0, var = 0;
  for (size_t d = 0; d < n; ++d) mean += v[d] / double(n);
  for (size_t d = 0; d < n; ++d) var += (v[d] - mean) * (v[d] - mean) / double(n);
  return {mean, var};
}

// z_ij = Σ_h α_hij f_h(x_j) + δ_ij x_i for every i and j, [T, T, D], each element summed in double.
template <class Real>
std::vector<double> residual_lens_vectors(const Real* probs, const Real* fx, const Real* x, size_t H, size_t T,
                                          size_t D) {
  std::vector<double> z(T * T * D);
  for (size_t i = 0; i < T; ++i)
    for (size_t j = 0; j < T; ++j)
      for (size_t d = 0; d < D; ++d) {
        double sum = i == j ? double(x[i * D + d]) : 0.0;
        for (size_t h = 0; h < H; ++h) sum += double(probs[(h * T + i) * T + j]) * double(fx[(h * T + j) * D + d]);
        z[(i * T + j) * D + d] = sum;
      }
  return z;
}

}  // namespace lenscheck
