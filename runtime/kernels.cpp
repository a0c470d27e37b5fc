#include "runtime/kernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace lenscheck::runtime {

void linear(const float* x, size_t rows, size_t in, const float* wt, const float* b, size_t out,
            float* y) {
  for (size_t r = 0; r < rows; ++r) {
    float* yr = y + r * out;
    for (size_t o = 0; o < out; ++o) yr[o] = b ? b[o] : 0.0f;
    const float* xr = x + r * in;
    for (size_t i = 0; i < in; ++i) {
      const float xi = xr[i];
      const float* wi = wt + i * out;
      for (size_t o = 0; o < out; ++o) yr[o] += xi * wi[o];
    }
  }
}

void attention_scores(const float* q, const float* k, size_t T, size_t H, size_t Dh, float scale,
                      float* scores) {
  const size_t D = H * Dh;
  for (size_t h = 0; h < H; ++h)
    for (size_t a = 0; a < T; ++a)
      for (size_t b = 0; b < T; ++b) {
        const float* qa = q + a * D + h * Dh;
        const float* kb = k + b * D + h * Dh;
        float dot = 0;
        for (size_t e = 0; e < Dh; ++e) dot += qa[e] * kb[e];
        scores[(h * T + a) * T + b] = dot * scale;
      }
}

void attend(const float* probs, const float* v, size_t T, size_t H, size_t Dh, float* context) {
  const size_t D = H * Dh;
  std::fill(context, context + T * D, 0.0f);
  for (size_t h = 0; h < H; ++h)
    for (size_t a = 0; a < T; ++a) {
      float* ca = context + a * D + h * Dh;
      for (size_t b = 0; b < T; ++b) {
        const float pab = probs[(h * T + a) * T + b];
        const float* vb = v + b * D + h * Dh;
        for (size_t e = 0; e < Dh; ++e) ca[e] += pab * vb[e];
      }
    }
}

void weight_by_key(const float* probs, const float* key_weight, size_t H, size_t T, float* out) {
  for (size_t h = 0; h < H; ++h)
    for (size_t a = 0; a < T; ++a)
      for (size_t b = 0; b < T; ++b)
        out[(h * T + a) * T + b] = probs[(h * T + a) * T + b] * key_weight[h * T + b];
}

void summed_transformed_norm(const float* probs, const float* fx, size_t H, size_t T, size_t D,
                             float* out) {
  std::vector<float> sum(D);
  for (size_t a = 0; a < T; ++a)
    for (size_t b = 0; b < T; ++b) {
      std::fill(sum.begin(), sum.end(), 0.0f);
      for (size_t h = 0; h < H; ++h) {
        const float p = probs[(h * T + a) * T + b];
        const float* f = fx + (h * T + b) * D;
        for (size_t e = 0; e < D; ++e) sum[e] += p * f[e];
      }
      out[a * T + b] = l2_norm(sum.data(), D);
    }
}

void layer_norm(float* x, size_t rows, size_t dim, const float* gamma, const float* beta, float eps) {
  for (size_t r = 0; r < rows; ++r) {
    float* xr = x + r * dim;
    double mean = 0;
    for (size_t i = 0; i < dim; ++i) mean += xr[i];
    mean /= static_cast<double>(dim);
    double var = 0;
    for (size_t i = 0; i < dim; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= static_cast<double>(dim);
    const double inv = 1.0 / std::sqrt(var + static_cast<double>(eps));
    for (size_t i = 0; i < dim; ++i)
      xr[i] = static_cast<float>((xr[i] - mean) * inv) * gamma[i] + beta[i];
  }
}

void softmax_rows(float* x, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    float* xr = x + r * cols;
    const float max = *std::max_element(xr, xr + cols);
    double sum = 0;
    for (size_t c = 0; c < cols; ++c) {
      xr[c] = std::exp(xr[c] - max);
      sum += xr[c];
    }
    const float total = static_cast<float>(sum);
    for (size_t c = 0; c < cols; ++c) xr[c] /= total;
  }
}

void gelu_erf(float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
}

void gelu_tanh(float* x, size_t n) {
  constexpr float k = 0.7978845608028654f;  // sqrt(2 / pi)
  for (size_t i = 0; i < n; ++i)
    x[i] = 0.5f * x[i] * (1.0f + std::tanh(k * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
}

void relu(float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = std::max(x[i], 0.0f);
}

float l2_norm(const float* x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return static_cast<float>(std::sqrt(s));
}

}  // namespace lenscheck::runtime
