#pragma once
// The runtime's hot loops, over contiguous row-major fp32 buffers. Every sum runs in an order the
// code fixes (never the vector width, the instruction set or a thread count), and no multiply-add
// is fused: results are bit-identical run to run and from one x86-64 machine to another.
#include <cstddef>
#include <vector>

namespace lenscheck::runtime {

// A [in, out] weight (a torch Linear's, transposed) copied once into the column panels that the
// blocked product reads, so no call packs it again.
struct PackedWeight {
  size_t in = 0, out = 0;
  std::vector<float> panels;
};
PackedWeight pack_weight(const float* wt, size_t in, size_t out);
// y[r, o] = b[o] + sum_i x[r, i] * wt[i, o] over [rows, in] x; b may be null. The terms are added
// in ascending i, as the plain loop does, whatever the blocking.
void linear(const float* x, size_t rows, const PackedWeight& wt, const float* b, float* y);
// f(x) of every head and token over [T, H*Dh] values v and a [H*Dh, out] weight:
// fx[h, t, o] = b[o] + sum_e v[t, h*Dh + e] * wt[h*Dh + e, o], head h's rows only; b may be null.
void head_transform(const float* v, size_t T, size_t H, size_t Dh, const PackedWeight& wt,
                    const float* b, float* fx);
// Per head h of the [T, H*Dh] activations: scores[h, a, b] = scale * q[a, h] . k[b, h].
void attention_scores(const float* q, const float* k, size_t T, size_t H, size_t Dh, float scale,
                      float* scores);
// context[a, h] = sum_b probs[h, a, b] * v[b, h], over [T, H*Dh] activations.
void attend(const float* probs, const float* v, size_t T, size_t H, size_t Dh, float* context);
// out[h, a, b] = probs[h, a, b] * key_weight[h, b]: the one lens computation (runtime/lens.h).
void weight_by_key(const float* probs, const float* key_weight, size_t H, size_t T, float* out);
// out[a, b] = || sum_h probs[h, a, b] * fx[h, b] ||, with fx the [H, T, D] transformed values:
// Kobayashi et al.'s head-summed norm, computed in double from each key's Gram matrix.
void summed_transformed_norm(const float* probs, const float* fx, size_t H, size_t T, size_t D,
                             float* out);
// In place over each row of `dim` values; statistics accumulate in double.
void layer_norm(float* x, size_t rows, size_t dim, const float* gamma, const float* beta, float eps);
// In place, max-subtracted, over each row of `cols` values; exponentials and their sum in double.
void softmax_rows(float* x, size_t rows, size_t cols);
// Computed in double and rounded once to float.
void gelu_erf(float* x, size_t n);
void gelu_tanh(float* x, size_t n);
void relu(float* x, size_t n);
// Euclidean norm of n values, accumulated in double.
float l2_norm(const float* x, size_t n);

}  // namespace lenscheck::runtime
