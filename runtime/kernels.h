#pragma once
// The runtime's hot loops, over contiguous row-major fp32 buffers. Every sum runs in an order the
// code fixes (never the vector width, the instruction set or a thread count), and a multiply-add
// is fused in the matrix products only, where every width fuses it alike: results are
// bit-identical run to run, for every thread count, and from one x86-64 machine to another.
#include <cstddef>
#include <vector>

#include "runtime/workers.h"

namespace lenscheck::runtime {

// The vector instructions the products and element-wise maps run on. Every set gives the same
// bits; the widest this CPU has is used, unless the environment variable LENSCHECK_ISA names
// another (baseline, avx2 or avx512: for benchmarks and tests; a set the CPU lacks, or another
// name, is an error at the first kernel call).
enum class InstructionSet { baseline, avx2, avx512 };
InstructionSet instruction_set();
bool instruction_set_supported(InstructionSet set);
const char* instruction_set_name(InstructionSet set);
// Switches the process to `set` (std::invalid_argument if the CPU lacks it).
void use_instruction_set(InstructionSet set);

// Every kernel that takes `workers` shares its outputs out among their threads; the bits do not
// depend on how many there are.
inline const Workers& one_thread() {
  static const Workers single(1);
  return single;
}

// A [in, out] weight (a torch Linear's, transposed) copied once into the column panels that the
// blocked product reads, so no call packs it again.
struct PackedWeight {
  size_t in = 0, out = 0;
  std::vector<float> panels;
};
PackedWeight pack_weight(const float* wt, size_t in, size_t out);
// y[r, o] = b[o] + sum_i x[r, i] * wt[i, o] over [rows, in] x; b may be null. The terms are added
// in ascending i, each by a fused multiply-add, as the plain loop with std::fma does, whatever the
// blocking.
void linear(const float* x, size_t rows, const PackedWeight& wt, const float* b, float* y,
            const Workers& workers = one_thread());
// f(x) of every head and token over [T, H*Dh] values v and a [H*Dh, out] weight:
// fx[h, t, o] = b[o] + sum_e v[t, h*Dh + e] * wt[h*Dh + e, o], head h's rows only; b may be null.
void head_transform(const float* v, size_t T, size_t H, size_t Dh, const PackedWeight& wt,
                    const float* b, float* fx, const Workers& workers = one_thread());
// Per head h of the [T, H*Dh] activations: scores[h, a, b] = scale * q[a, h] . k[b, h].
void attention_scores(const float* q, const float* k, size_t T, size_t H, size_t Dh, float scale,
                      float* scores, const Workers& workers = one_thread());
// context[a, h] = sum_b probs[h, a, b] * v[b, h], over [T, H*Dh] activations.
void attend(const float* probs, const float* v, size_t T, size_t H, size_t Dh, float* context,
            const Workers& workers = one_thread());
// Both of the above with softmax_rows between them, a block of queries at a time, so that a
// block's scores stay in cache from their product through the softmax to the context: the same
// bits as attention_scores, softmax_rows and attend in turn. probs [H, T, T] receives the
// probabilities, or, where null (a plain forward), each block's live in scratch only; raw_scores,
// where not null, receives the scores before the softmax.
void attention(const float* q, const float* k, const float* v, size_t T, size_t H, size_t Dh, float scale,
               float* probs, float* raw_scores, float* context, const Workers& workers = one_thread());
// out[h, a, b] = probs[h, a, b] * key_weight[h, b]: the one lens computation (runtime/lens.h).
void weight_by_key(const float* probs, const float* key_weight, size_t H, size_t T, float* out);
// out[a, b] = || sum_h probs[h, a, b] * fx[h, b] ||, with fx the [H, T, D] transformed values:
// Kobayashi et al.'s head-summed norm, computed in double from each key's Gram matrix.
void summed_transformed_norm(const float* probs, const float* fx, size_t H, size_t T, size_t D,
                             float* out);
// Kobayashi et al. 2021 ("Incorporating Residual and Normalization Layers into Analysis of Masked Language
// Models"): the attention block with its residual and LayerNorm, for query i and key j, over probs
// [H, T, T], fx [H, T, D] (f_h(x_j), b_O excluded), the layer's input x [T, D] and its real pre-LayerNorm
// state y [T, D] (context · W_O + b_O + x), with the attention LayerNorm's gain and ε (β excluded):
//   z_ij = Σ_h α_hij f_h(x_j) + δ_ij x_i,  g_i(z) = γ ⊙ (z − mean z) / sqrt(var y_i + ε)
//   residual_norm[i, j] = ‖z_ij‖,  residual_layernorm_norm[i, j] = ‖g_i(z_ij)‖
//   ratio[i] = ‖Σ_{j≠i} t_ij‖ / (‖Σ_{j≠i} t_ij‖ + ‖t_ii‖) for t = Σ_h α f (attention), z (residual), g_i(z);
//              0 where both norms are 0
// y enters through var y_i only: Σ_j z_ij = y_i − b_O (the decomposition is complete) is a property
// (properties/), not a shortcut, which would cancel where a token's own term dominates. The off-diagonal
// norms come from each key's Gram matrix of its H vectors, as summed_transformed_norm's; everything in
// double, rounded to float once. Any output may be null. NonFiniteError naming the token where
// var y_i + ε is 0 (a constant state with ε = 0); a NaN state propagates to the outputs.
struct ResidualLenses {
  float *residual_norm = nullptr, *residual_layernorm_norm = nullptr;  // [T, T]
  float *ratio_attention = nullptr, *ratio_residual = nullptr, *ratio_residual_layernorm = nullptr;  // [T]
};
void residual_lenses(const float* probs, const float* fx, const float* x, const float* y, const float* gain, double eps,
                     size_t H, size_t T, size_t D, const ResidualLenses& out);
// In place over each row of `dim` values; statistics accumulate in double.
void layer_norm(float* x, size_t rows, size_t dim, const float* gamma, const float* beta, float eps,
                const Workers& workers = one_thread());
// In place, max-subtracted, over each row of `cols` values; exponentials and their sum in double.
void softmax_rows(float* x, size_t rows, size_t cols, const Workers& workers = one_thread());
// Computed in double and rounded once to float.
void gelu_erf(float* x, size_t n, const Workers& workers = one_thread());
void gelu_tanh(float* x, size_t n, const Workers& workers = one_thread());
void relu(float* x, size_t n);
// Euclidean norm of n values, accumulated in double.
float l2_norm(const float* x, size_t n);

}  // namespace lenscheck::runtime
