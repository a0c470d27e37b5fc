#pragma once
// The runtime's hot loops, over contiguous row-major fp32 buffers. Loops are written so the compiler
// can vectorise them without reassociating any sum: results are bit-identical run to run.
#include <cstddef>

namespace lenscheck::runtime {

// y[r, o] = b[o] + sum_i x[r, i] * wt[i, o], with wt the transposed [in, out] weight; b may be null.
void linear(const float* x, size_t rows, size_t in, const float* wt, const float* b, size_t out,
            float* y);
// In place over each row of `dim` values; statistics accumulate in double.
void layer_norm(float* x, size_t rows, size_t dim, const float* gamma, const float* beta, float eps);
// In place, max-subtracted, over each row of `cols` values.
void softmax_rows(float* x, size_t rows, size_t cols);
void gelu_erf(float* x, size_t n);
void gelu_tanh(float* x, size_t n);
void relu(float* x, size_t n);
// Euclidean norm of n values, accumulated in double.
float l2_norm(const float* x, size_t n);

}  // namespace lenscheck::runtime
