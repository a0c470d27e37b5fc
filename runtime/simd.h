#pragma once
// The vector layer the runtime's kernel files share (runtime/ only; kernels.h is the interface): the
// vector types and their loads, the instruction sets' fused multiply-adds and tile shapes, the
// product and element-wise descriptions, and the one table of what is compiled per instruction set.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>  // declares the fused multiply-add builtins of AVX2 and AVX-512
#endif

#include "runtime/kernels.h"

// Same bits on every x86-64: the matrix products fuse each multiply-add (one rounding, at every
// vector width and in std::fma), everything else rounds each multiply and each add on its own (the
// project compiles with -ffp-contract=off, so the compiler fuses nothing), and every sum runs in an
// order the code fixes, never the vector width or a thread count. So every version of a kernel
// agrees to the bit with the others: the matrix product and the element-wise maps, whose vector
// shapes are the instruction set's, are compiled for the baseline, AVX2 + FMA and AVX-512 and
// chosen by instruction_set() (isa_kernels(), the one table); the other kernels are cloned for AVX2
// and the x86-64 baseline (target_clones, picked by the loader).
#if defined(__x86_64__) && !defined(__AVX2__)
#define LENSCHECK_KERNEL __attribute__((target_clones("avx2", "default")))
#else
#define LENSCHECK_KERNEL
#endif
// Helpers are inlined into each clone, so they compile for its instruction set.
#define LENSCHECK_INLINE [[gnu::always_inline]] inline

// 32- and 64-byte vectors by value where the instruction set lacks them change no ABI here: every
// helper is inlined.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace lenscheck::runtime::simd {

using f4 = float __attribute__((vector_size(16)));
using f8 = float __attribute__((vector_size(32)));   // one AVX register, two SSE ones
using f16 = float __attribute__((vector_size(64)));  // one AVX-512 register
using d4 = double __attribute__((vector_size(32)));
using d8 = double __attribute__((vector_size(64)));  // one AVX-512 register

template <class V, class T>
LENSCHECK_INLINE V load(const T* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class V, class T>
LENSCHECK_INLINE void store(T* p, const V& v) {
  std::memcpy(p, &v, sizeof v);
}
// A vector of doubles D: its lane count, the floats it widens from, the mask its comparisons give.
template <class D>
constexpr size_t lanes_of = sizeof(D) / sizeof(double);
template <class D>
struct FloatsOf {
  typedef float type __attribute__((vector_size(sizeof(D) / 2)));
};
template <class D>
using mask_of = decltype(D{} < D{});

template <class D = d4>
LENSCHECK_INLINE D splat(double x) { return D{} + x; }
template <class D = d4>
LENSCHECK_INLINE D widen(const float* p) {
  const auto floats = load<typename FloatsOf<D>::type>(p);
#if defined(__x86_64__)
  // One instruction: GCC 12 converts 8 floats to 8 doubles in two halves and an insert.
  if constexpr (sizeof(D) == 64) return __builtin_ia32_cvtps2pd512_mask(floats, D{}, -1, 4);
#endif
  return __builtin_convertvector(floats, D);
}
template <class D>
LENSCHECK_INLINE void narrow(float* p, const D& v) { store(p, __builtin_convertvector(v, typename FloatsOf<D>::type)); }
LENSCHECK_INLINE double lane_total(const d4& s) { return (s[0] + s[1]) + (s[2] + s[3]); }

// Parts per thread when a kernel is shared out: more than one, so that a thread the OS keeps
// waiting (cores shared with other work) holds up no more than a small part of the kernel; the
// other threads take the parts it leaves.
constexpr size_t kPartsPerThread = 4;

// What a tile needs of an instruction set: its vector, the fused multiply-add on it, and the tile's
// shape (as many accumulators as fill the register file, less the operands).
// The element-wise maps compute in Doubles, with the same set's fused multiply-add.
struct Avx512 {
  using Vec = f16;
  using Doubles = d8;
  static constexpr size_t rows = 8, panels = 2;  // 16 of 32 registers hold sums
  LENSCHECK_INLINE static Vec fma(Vec a, Vec b, Vec c) { return __builtin_ia32_vfmaddps512_mask(a, b, c, -1, 4); }
  LENSCHECK_INLINE static d8 fma(d8 a, d8 b, d8 c) { return __builtin_ia32_vfmaddpd512_mask(a, b, c, -1, 4); }
};
struct Avx2 {
  using Vec = f8;
  using Doubles = d4;
  // 10 of 16 registers hold sums: at 6 rows (12) GCC 12 kept one of the two panel vectors on the
  // stack and read it back for every multiply-add, 60 GFLOP/s against 96 now on Zen 5.
  static constexpr size_t rows = 5, panels = 1;
  LENSCHECK_INLINE static Vec fma(Vec a, Vec b, Vec c) { return __builtin_ia32_vfmaddps256(a, b, c); }
  LENSCHECK_INLINE static d4 fma(d4 a, d4 b, d4 c) { return __builtin_ia32_vfmaddpd256(a, b, c); }
};
// The x86-64 baseline has no fused multiply-add instruction: std::fma per lane (glibc's, exact in
// software where the CPU lacks it), several times slower, for CPUs older than AVX2 only.
struct Baseline {
  using Vec = f4;
  using Doubles = d4;
  static constexpr size_t rows = 4, panels = 1;
  template <class V>
  LENSCHECK_INLINE static V fma(V a, V b, V c) {
    for (size_t j = 0; j < sizeof(V) / sizeof(c[0]); ++j) c[j] = std::fma(a[j], b[j], c[j]);
    return c;
  }
};

// f(begin, end) over [0, n) in contiguous blocks, each a multiple of `grain` long but the last.
template <class F>
void in_blocks(const Workers& workers, size_t n, size_t grain, F f) {
  const size_t grains = (n + grain - 1) / grain,
               parts = std::min<size_t>(kPartsPerThread * workers.threads(), grains);
  workers.run(parts, [&](size_t part) {
    f(std::min(n, grains * part / parts * grain), std::min(n, grains * (part + 1) / parts * grain));
  });
}

// B(i, o) = data[i * row_stride + o * col_stride]: a [in, out] weight, or K and V seen per head.
struct Operand {
  const float* data;
  size_t row_stride, col_stride;
};

constexpr size_t kPanel = 16;

// c[r, o] for rows × out, with a[r, i] = a[r * lda + i], from B already in panels: panel p's row i
// starts at panels[p * panel_stride + i * kPanel]. bias may be null (sums start at 0).
struct Product {
  const float* a;
  size_t lda, rows, in;
  const float* panels;
  size_t panel_stride, out;
  const float* bias;
  float scale;
  float* c;
  size_t ldc;
};

// A pass over rows of `cols` floats: GELU (erf or tanh) of every value, or a softmax or a
// LayerNorm of every row.
struct Elementwise {
  enum { gelu_erf, gelu_tanh, softmax, layer_norm } function;
  const float* gamma = nullptr;  // LayerNorm's
  const float* beta = nullptr;
  float eps = 0;
};

// What is compiled once per instruction set (its vectors and fused multiply-add): the runs of panels a
// product is shared out in, the product over a range of them, and the element-wise pass. One table, one
// row per set; isa_kernels() is this process's row (instruction_set()).
struct IsaKernels {
  size_t (*runs)(const Product& m);
  void (*multiply)(const Product& m, size_t first_run, size_t end_run);
  void (*map)(Elementwise e, float* x, size_t rows, size_t cols);
};
const IsaKernels& isa_kernels();

// The rows of that table: product.cpp and elementwise.cpp define them, each with its target.
size_t runs_baseline(const Product& m);
size_t runs_avx2(const Product& m);
size_t runs_avx512(const Product& m);
void multiply_baseline(const Product& m, size_t first_run, size_t end_run);
void map_baseline(Elementwise e, float* x, size_t rows, size_t cols);
#if defined(__x86_64__)
[[gnu::target("avx2,fma")]] void multiply_avx2(const Product& m, size_t first_run, size_t end_run);
[[gnu::target("avx512f")]] void multiply_avx512(const Product& m, size_t first_run, size_t end_run);
[[gnu::target("avx2,fma")]] void map_avx2(Elementwise e, float* x, size_t rows, size_t cols);
[[gnu::target("avx512f")]] void map_avx512(Elementwise e, float* x, size_t rows, size_t cols);
#endif

}  // namespace lenscheck::runtime::simd
