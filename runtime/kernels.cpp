#include "runtime/kernels.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numbers>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>
#if defined(__x86_64__)
#include <immintrin.h>  // declares the fused multiply-add builtins of AVX2 and AVX-512
#endif

// Same bits on every x86-64: the matrix products fuse each multiply-add (one rounding, at every
// vector width and in std::fma), everything else rounds each multiply and each add on its own (the
// project compiles with -ffp-contract=off, so the compiler fuses nothing), and every sum runs in an
// order the code fixes, never the vector width or a thread count. So every version of a kernel
// agrees to the bit with the others: the matrix product and the element-wise maps, whose vector
// shapes are the instruction set's, are compiled for the baseline, AVX2 + FMA and AVX-512 and
// chosen by instruction_set() (multiply() and map() below); the other kernels are cloned for AVX2
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

namespace lenscheck::runtime {

namespace {

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

// ---- Matrix products -----------------------------------------------------------------------
// Every output is c[r, o] = fma(a[r, in-1], b[in-1, o], ... fma(a[r, 0], b[0, o], init[o])) * scale:
// one fused multiply-add per term, in ascending i, exactly the plain loop's, whatever the tiling.
// A fused multiply-add rounds once at every vector width (std::fma in scalar code too), so every
// instruction set gives the same bits. Tiles of Rows rows × Panels panels of kPanel outputs keep
// their sums in registers; B is first copied into panels of kPanel columns, each a run of
// contiguous rows.

// B(i, o) = data[i * row_stride + o * col_stride]: a [in, out] weight, or K and V seen per head.
struct Operand {
  const float* data;
  size_t row_stride, col_stride;
};

constexpr size_t kPanel = 16;

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

// One output tile: R rows × P panels. Panel q's row i is b[q][i * kPanel ...]; init[q] its kPanel
// starting values, or, where init is null, the sums so far are c's (a block of inputs after the
// first: a float stored and loaded back is the same float, so blocking moves no bit); width[q] its
// real columns (the last panel may be partial: Full says none is), c[q] its output.
// If `prefetch` is set, the next tile's panels (laid out as b's) are fetched into L2 on the way.
template <class Isa, size_t R, size_t P, bool Full>
LENSCHECK_INLINE void tile(const float* a, size_t lda, size_t in, const float* const* b,
                           const float* const* init, float scale, float* const* c, size_t ldc,
                           const size_t* width, const float* const* prefetch) {
  using Vec = typename Isa::Vec;
  constexpr size_t lanes = sizeof(Vec) / sizeof(float), V = kPanel / lanes;
  Vec acc[R][P][V];
  for (size_t r = 0; r < R; ++r)
    for (size_t q = 0; q < P; ++q) {
      float sums[kPanel] = {};
      const float* from = init ? init[q] : Full || width[q] == kPanel ? c[q] + r * ldc : sums;
      if (!Full && from == sums) std::copy_n(c[q] + r * ldc, width[q], sums);
      for (size_t v = 0; v < V; ++v) acc[r][q][v] = load<Vec>(from + lanes * v);
    }
  for (size_t i = 0; i < in; ++i) {
    if (prefetch)
      for (size_t q = 0; q < P; ++q) __builtin_prefetch(prefetch[q] + i * kPanel, 0, 2);
    Vec w[P][V];
    for (size_t q = 0; q < P; ++q)
      for (size_t v = 0; v < V; ++v) w[q][v] = load<Vec>(b[q] + i * kPanel + lanes * v);
    for (size_t r = 0; r < R; ++r) {
      const Vec x = a[r * lda + i] - Vec{};  // x in every lane: x - 0 is x, even for -0
      for (size_t q = 0; q < P; ++q)
        for (size_t v = 0; v < V; ++v) acc[r][q][v] = Isa::fma(x, w[q][v], acc[r][q][v]);
    }
  }
  for (size_t r = 0; r < R; ++r)
    for (size_t q = 0; q < P; ++q) {
      if (Full || width[q] == kPanel) {
        for (size_t v = 0; v < V; ++v) store(c[q] + r * ldc + lanes * v, acc[r][q][v] * scale);
        continue;
      }
      float out[kPanel];
      for (size_t v = 0; v < V; ++v) store(out + lanes * v, acc[r][q][v] * scale);
      std::copy_n(out, width[q], c[q] + r * ldc);
    }
}

// The last rows % Rows rows of a run of panels, R or fewer of them.
template <class Isa, size_t R, size_t P, bool Full>
LENSCHECK_INLINE void remainder_tile(size_t rows, const float* a, size_t lda, size_t in, const float* const* b,
                                     const float* const* init, float scale, float* const* c, size_t ldc,
                                     const size_t* width) {
  if constexpr (R > 0) {
    if (rows == R)
      tile<Isa, R, P, Full>(a, lda, in, b, init, scale, c, ldc, width, nullptr);
    else
      remainder_tile<Isa, R - 1, P, Full>(rows, a, lda, in, b, init, scale, c, ldc, width);
  }
}

// Floats of B [in, out] in panels, the last one padded with zeros.
LENSCHECK_INLINE size_t packed_size(size_t in, size_t out) { return (out + kPanel - 1) / kPanel * in * kPanel; }

// B as panels of kPanel columns, each `in` contiguous rows: packed[(p * in + i) * kPanel + j] =
// B(i, p * kPanel + j), zero past `out`. A weight is read row by row, in memory order.
LENSCHECK_INLINE void pack_panels(Operand b, size_t in, size_t out, float* packed) {
  const size_t panels = (out + kPanel - 1) / kPanel;
  if (b.col_stride == 1) {
    for (size_t i = 0; i < in; ++i) {
      const float* row = b.data + i * b.row_stride;
      for (size_t p = 0; p < panels; ++p) {
        const size_t width = std::min(kPanel, out - p * kPanel);
        float* dst = packed + (p * in + i) * kPanel;
        std::copy_n(row + p * kPanel, width, dst);
        std::fill(dst + width, dst + kPanel, 0.0f);
      }
    }
    return;
  }
  std::fill(packed, packed + packed_size(in, out), 0.0f);
  for (size_t o = 0; o < out; ++o) {
    const float* column = b.data + o * b.col_stride;
    float* dst = packed + (o / kPanel) * in * kPanel + o % kPanel;
    for (size_t i = 0; i < in; ++i) dst[i * kPanel] = column[i * b.row_stride];
  }
}

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

// Inputs per block: kBlock rows of two panels (32 KiB) stay in L1 (48 KiB on this project's
// machines) while every row tile reads them, where two whole panels of a 1024-input product
// (128 KiB) would stream from L2 for each tile.
constexpr size_t kBlock = 256;

// Panels [first, first + P) of the product, every row, in blocks of kBlock inputs.
template <class Isa, size_t P, bool Full>
LENSCHECK_INLINE void multiply_panels(const Product& m, size_t first, bool prefetch_next) {
  constexpr size_t Rows = Isa::rows;
  float init[P][kPanel];
  const float *b[P], *init_of[P], *next[P];
  float* c[P];
  size_t width[P];
  for (size_t q = 0; q < P; ++q) {
    const size_t o0 = (first + q) * kPanel;
    width[q] = std::min(kPanel, m.out - o0);
    for (size_t j = 0; j < kPanel; ++j) init[q][j] = m.bias && j < width[q] ? m.bias[o0 + j] : 0.0f;
    b[q] = m.panels + (first + q) * m.panel_stride;
    next[q] = b[q] + P * m.panel_stride;
    init_of[q] = init[q];
    c[q] = m.c + o0;
  }
  for (size_t i0 = 0; i0 < m.in; i0 += kBlock) {
    const size_t in = std::min(kBlock, m.in - i0);
    const bool last = i0 + in == m.in;
    const float *bi[P], *ahead[P];
    for (size_t q = 0; q < P; ++q) {
      bi[q] = b[q] + i0 * kPanel;
      ahead[q] = last ? next[q] : bi[q] + in * kPanel;
    }
    // The first tile of a block prefetches the next block, or the next run's first: at few rows a
    // weight comes from L3 once per forward, and the hardware prefetcher alone keeps the tile
    // waiting (6 % of a T = 16 forward, 4 % at T = 128).
    const bool prefetch = !last || prefetch_next;
    const float* const* starts = i0 == 0 ? init_of : nullptr;
    const float scale = last ? m.scale : 1.0f;  // exact on the sums kept between blocks
    size_t r = 0;
    float* cr[P];
    for (; r + Rows <= m.rows; r += Rows) {
      for (size_t q = 0; q < P; ++q) cr[q] = c[q] + r * m.ldc;
      tile<Isa, Rows, P, Full>(m.a + r * m.lda + i0, m.lda, in, bi, starts, scale, cr, m.ldc, width,
                         r == 0 && prefetch ? ahead : nullptr);
    }
    for (size_t q = 0; q < P; ++q) cr[q] = c[q] + r * m.ldc;
    remainder_tile<Isa, Rows - 1, P, Full>(m.rows - r, m.a + r * m.lda + i0, m.lda, in, bi, starts, scale, cr,
                                     m.ldc, width);
  }
}

// Runs of Isa::panels panels, the last run shorter where the panels do not divide evenly.
template <class Isa>
LENSCHECK_INLINE size_t panel_runs(const Product& m) {
  return ((m.out + kPanel - 1) / kPanel + Isa::panels - 1) / Isa::panels;
}

// Runs [first_run, end_run) of the product.
template <class Isa>
LENSCHECK_INLINE void multiply_tiled(const Product& m, size_t first_run, size_t end_run) {
  const size_t count = (m.out + kPanel - 1) / kPanel;
  for (size_t run = first_run; run < end_run; ++run) {
    const size_t p = run * Isa::panels;
    const bool full = (p + Isa::panels) * kPanel <= m.out;  // no partial panel in this run
    if (p + Isa::panels <= count) {
      if (full)
        multiply_panels<Isa, Isa::panels, true>(m, p, p + 2 * Isa::panels <= count);
      else
        multiply_panels<Isa, Isa::panels, false>(m, p, false);
    } else if constexpr (Isa::panels > 1) {
      multiply_panels<Isa, 1, false>(m, p, false);
    }
  }
}

// The tile's shape and fused multiply-add are the instruction set's, so the product is compiled
// once per set, and the one this process uses is chosen at start-up (instruction_set()).
#if defined(__x86_64__)
[[gnu::target("avx512f")]] void multiply_avx512(const Product& m, size_t first, size_t end) {
  multiply_tiled<Avx512>(m, first, end);
}
[[gnu::target("avx2,fma")]] void multiply_avx2(const Product& m, size_t first, size_t end) {
  multiply_tiled<Avx2>(m, first, end);
}
#endif
void multiply_baseline(const Product& m, size_t first, size_t end) { multiply_tiled<Baseline>(m, first, end); }

// The runs of panels of this instruction set's tile, which threads share out.
size_t runs_of(const Product& m) {
  switch (instruction_set()) {
    case InstructionSet::avx512: return panel_runs<Avx512>(m);
    case InstructionSet::avx2: return panel_runs<Avx2>(m);
    case InstructionSet::baseline: break;
  }
  return panel_runs<Baseline>(m);
}

void multiply_runs(const Product& m, size_t first, size_t end) {
  switch (instruction_set()) {
#if defined(__x86_64__)
    case InstructionSet::avx512: return multiply_avx512(m, first, end);
    case InstructionSet::avx2: return multiply_avx2(m, first, end);
#else
    case InstructionSet::avx512:
    case InstructionSet::avx2:
#endif
    case InstructionSet::baseline: return multiply_baseline(m, first, end);
  }
}

// The whole product, its runs of panels shared out in contiguous blocks.
void multiply(const Product& m, const Workers& workers) {
  const size_t runs = runs_of(m), parts = std::min<size_t>(kPartsPerThread * workers.threads(), runs);
  workers.run(parts, [&](size_t part) { multiply_runs(m, runs * part / parts, runs * (part + 1) / parts); });
}

// Scratch for the panels of K or V, kept from call to call (one per thread), so that no call
// pages in fresh memory.
float* packing_scratch(size_t floats) {
  thread_local std::vector<float> packed;
  packed.resize(std::max(packed.size(), floats));
  return packed.data();
}

// The same product with B packed on the way in: activations (K, V) change with every call.
void multiply_packing(const float* a, size_t lda, size_t rows, size_t in, Operand b, size_t out,
                      float scale, float* c, size_t ldc) {
  float* packed = packing_scratch(packed_size(in, out));
  pack_panels(b, in, out, packed);
  const Product m{a, lda, rows, in, packed, in * kPanel, out, nullptr, scale, c, ldc};
  multiply_runs(m, 0, runs_of(m));
}

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

// ---- Elementary functions in double, rounded once to float ---------------------------------

// Taylor coefficients 1 / k!.
constexpr std::array<double, 13> kExpTaylor = [] {
  std::array<double, 13> c{};
  double factorial = 1;
  for (size_t k = 0; k < c.size(); ++k) {
    if (k > 0) factorial *= static_cast<double>(k);  // exact up to 22!
    c[k] = 1.0 / factorial;
  }
  return c;
}();

// Whether a comparison held in every lane: the halves ANDed down to 128 bits first, a few vector
// operations where taking every lane out cost some 15 instructions per 8 GELU arguments.
template <class M>
LENSCHECK_INLINE bool all_lanes(const M& mask) {
  if constexpr (sizeof(M) > 16) {
    typedef decltype(+mask[0]) Half __attribute__((vector_size(sizeof(M) / 2)));
    const Half low = load<Half>(reinterpret_cast<const char*>(&mask)),
               high = load<Half>(reinterpret_cast<const char*>(&mask) + sizeof(Half));
    return all_lanes(low & high);
  } else {
    auto all = mask[0];
    for (size_t j = 1; j < sizeof(M) / sizeof(all); ++j) all &= mask[j];
    return all != 0;
  }
}

// Element-wise functions run on four or eight lanes (map() below); polynomials by Estrin's scheme,
// whose independent halves keep the pipelines busy where Horner's rule would wait on each
// multiply-add in turn.
// c[Lo] + c[Lo + 1] w + ... + c[Lo + Len - 1] w^(Len - 1), with pw[k] = w^(2^k); each step one
// fused multiply-add of the instruction set (one rounding, the same at every width).
template <class Isa, size_t Lo, size_t Len, class D, size_t N>
LENSCHECK_INLINE D estrin(const std::array<double, N>& c, const D* pw) {
  constexpr size_t half = std::bit_floor(Len - 1);  // the largest power of two below Len
  if constexpr (Len == 2)
    return Isa::fma(pw[0], splat<D>(c[Lo + 1]), splat<D>(c[Lo]));
  else if constexpr (Len - half == 1)
    return Isa::fma(pw[std::countr_zero(half)], splat<D>(c[Lo + half]), estrin<Isa, Lo, half>(c, pw));
  else
    return Isa::fma(pw[std::countr_zero(half)], estrin<Isa, Lo + half, Len - half>(c, pw),
                    estrin<Isa, Lo, half>(c, pw));
}

template <class Isa, class D, size_t N>
  requires(N >= 2)
LENSCHECK_INLINE D polynomial(const std::array<double, N>& c, const D& w) {
  D pw[std::bit_width(N - 1)];
  pw[0] = w;
  for (size_t k = 1; k < std::size(pw); ++k) pw[k] = pw[k - 1] * pw[k - 1];
  return estrin<Isa, 0, N>(c, pw);
}

// e^x: x = n ln 2 + r with |r| <= ln 2 / 2 (ln 2 in two parts, so n ln2_hi is exact), e^r by its
// Taylor series to r^12 (relative truncation below 3e-16), 2^n written into the exponent bits.
// Arguments are clamped to [-708, 709], where the result is 0 or inf in float anyway.
template <class Isa, class D>
LENSCHECK_INLINE D exp_lanes(const D& arg) {
  using I = mask_of<D>;  // 64-bit integers, as many as D's lanes
  constexpr double kLn2Hi = 0x1.62e42fee00000p-1, kLn2Lo = 0x1.a39ef35793c76p-33;
  constexpr double kShift = 0x1.8p52;  // adding it rounds to an integer, kept in the low bits
  const D lo = splat<D>(-708.0), hi = splat<D>(709.0);
  D x = arg < lo ? lo : arg;
  x = x > hi ? hi : x;
  const D t = x * std::numbers::log2e + kShift;
  const D n = t - kShift;
  const D r = Isa::fma(-n, splat<D>(kLn2Lo), Isa::fma(-n, splat<D>(kLn2Hi), x));
  const I two_n = ((I)t + 1023) << 52;  // vector casts reinterpret the bits
  return polynomial<Isa>(kExpTaylor, r) * (D)two_n;
}

// erf(z) / z as a polynomial in w = z²/2 - 1, for |z| < 2: the Chebyshev interpolant of degree 15
// on z² in [0, 4] (relative error of erf below 1e-15, of 1 - erf below 3e-13).
constexpr std::array<double, 16> kErfSmall = {
    0.67493323603965449,     -0.26111186093124533,    0.11947913860991873,
    -0.048662777449162399,   0.017128344570413217,    -0.0052348758360039379,
    0.0014050914348702325,   -0.00033514353476450447, 7.1800964431234428e-05,
    -1.3946268869778145e-05, 2.4758957014288721e-06,  -4.0451986498511727e-07,
    6.1085480423939131e-08,  -8.6054039345750954e-09, 1.2020241607624271e-09,
    -1.4770319689549893e-10};
// sqrt(pi) a e^(a²) erfc(a) as a polynomial in w = 8 / a² - 1, for a >= 2: the Chebyshev
// interpolant of degree 21 on 1/a² in [0, 1/4] (relative error below 1e-14).
constexpr std::array<double, 22> kErfcLarge = {
    0.94660953165424289,     -0.046181019061062943,   0.0057979671569701923,
    -0.0010676869570183393,  0.00024663574810242304,  -6.6517093544891099e-05,
    2.0117528733970012e-05,  -6.6522601753750728e-06, 2.3642486398454199e-06,
    -8.9194403779761033e-07, 3.5281784219313867e-07,  -1.4605567553310772e-07,
    6.6101513548153731e-08,  -2.9818820549118191e-08, 7.6920986550018962e-09,
    -3.0775653540744811e-09, 8.6240219813889362e-09,  -4.7176961731116244e-09,
    -2.9119233085401156e-09, 1.7104690189481434e-09,  1.3209318891230478e-09,
    -7.4369730575860808e-10};

// x/2 (1 + erf(x / sqrt 2)).
template <class Isa>
struct GeluErf {
  template <class D>
  LENSCHECK_INLINE D operator()(const D& x) const {
    const D z = x * (std::numbers::sqrt2 / 2);
    const D a = z < splat<D>(0.0) ? -z : z;
    const mask_of<D> small = a < splat<D>(2.0);
    D phi = Isa::fma(z, polynomial<Isa>(kErfSmall, z * z * 0.5 - 1.0), splat<D>(1.0));
    if (!all_lanes(small)) {  // a lane with |z| >= 2, or NaN
      const D inv = 1.0 / a;
      const D erfc = exp_lanes<Isa>(-(a * a)) * polynomial<Isa>(kErfcLarge, 8.0 * inv * inv - 1.0) *
                      (std::numbers::inv_sqrtpi * inv);
      phi = small ? phi : (z > splat<D>(0.0) ? 2.0 - erfc : erfc);
    }
    return 0.5 * x * phi;
  }
};

// x/2 (1 + tanh(y)) = x / (1 + e^(-2y)), y = sqrt(2/pi) (x + 0.044715 x³): no cancellation.
template <class Isa>
struct GeluTanh {
  template <class D>
  LENSCHECK_INLINE D operator()(const D& x) const {
    const double k = std::numbers::sqrt2 * std::numbers::inv_sqrtpi;
    return x / (1.0 + exp_lanes<Isa>(-2.0 * k * (x + 0.044715 * x * x * x)));
  }
};

// Applies f to n floats in place, lanes_of<D> at a time, computed in double and rounded once; the
// tail goes through f padded with `pad`, so every element sees the same arithmetic wherever it sits.
template <class D, class F>
LENSCHECK_INLINE void map_in_place(float* x, size_t n, float pad, F f) {
  constexpr size_t lanes = lanes_of<D>;
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) narrow(x + i, f(widen<D>(x + i)));
  if (i == n) return;
  float tail[lanes];
  std::fill_n(tail, lanes, pad);
  std::copy(x + i, x + n, tail);
  narrow(tail, f(widen<D>(tail)));
  std::copy(tail, tail + (n - i), x + i);
}

// Terms of the sums below: the value itself, its squared distance from m, e^(value - shift).
struct Plus {
  template <class D>
  LENSCHECK_INLINE D operator()(const D& v, const D& sum) const { return sum + v; }
};
template <class Isa>
struct SquaredDistance {
  double m;
  template <class D>
  LENSCHECK_INLINE D operator()(const D& v, const D& sum) const { return Isa::fma(v - m, v - m, sum); }
};
template <class Isa>
struct ExpShifted {
  double shift;
  template <class D>
  LENSCHECK_INLINE D operator()(const D& x) const { return exp_lanes<Isa>(x - shift); }
};

// Sums in double over eight lanes: lane j adds the terms i ≡ j (mod 8) in ascending i, then
// ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)). One order at every width (one AVX-512 vector
// of lanes, two of AVX2 or the baseline), and eight chains where one would wait on every add.
template <class D>
struct EightLanes {
  static constexpr size_t lanes = lanes_of<D>, parts = 8 / lanes;
  D part[parts] = {};
  // Adds term(widen(x + 8k + lanes p)) to part p, for the floats x[0, 8).
  template <class Term>
  LENSCHECK_INLINE void add(const float* x, Term term) {
    for (size_t p = 0; p < parts; ++p) part[p] = term(widen<D>(x + lanes * p), part[p]);
  }
  // The same for the last n < 8 floats of a row, lane by lane.
  template <class Term>
  LENSCHECK_INLINE void add_tail(const float* x, size_t n, Term term) {
    float pad[8] = {};
    std::copy_n(x, n, pad);
    for (size_t p = 0; p < parts; ++p) {
      const D sum = term(widen<D>(pad + lanes * p), part[p]);
      for (size_t j = 0; j < lanes; ++j)
        if (lanes * p + j < n) part[p][j] = sum[j];
    }
  }
  LENSCHECK_INLINE double total() const {
    double l[8];
    for (size_t p = 0; p < parts; ++p)
      for (size_t j = 0; j < lanes; ++j) l[lanes * p + j] = part[p][j];
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
  }
};

// The largest of n >= 1 values; max is exact, so the lanes change nothing.
template <class Isa>
LENSCHECK_INLINE float max_of(const float* x, size_t n) {
  using Vec = typename Isa::Vec;
  constexpr size_t lanes = sizeof(Vec) / sizeof(float);
  float max = x[0];
  size_t i = 0;
  if (n >= lanes) {
    Vec m = load<Vec>(x);
    for (i = lanes; i + lanes <= n; i += lanes) {
      const Vec v = load<Vec>(x + i);
      m = v > m ? v : m;
    }
    for (size_t j = 0; j < lanes; ++j) max = m[j] > max ? m[j] : max;
  }
  for (; i < n; ++i) max = x[i] > max ? x[i] : max;
  return max;
}

// A row of n scores in place: e^(x - max) in double, rounded once to float, their sum (of the
// rounded values) in double in eight lanes and rounded once, then every value divided by it.
template <class Isa>
LENSCHECK_INLINE void softmax_row(float* x, size_t n) {
  using D = typename Isa::Doubles;
  using Vec = typename Isa::Vec;
  constexpr size_t lanes = lanes_of<D>, floats = sizeof(Vec) / sizeof(float);
  const float max = max_of<Isa>(x, n);
  const ExpShifted<Isa> exp{max};
  EightLanes<D> sum;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (size_t p = 0; p < 8 / lanes; ++p) narrow(x + i + lanes * p, exp(widen<D>(x + i + lanes * p)));
    sum.add(x + i, Plus{});
  }
  if (i < n) {
    map_in_place<D>(x + i, n - i, max, exp);
    sum.add_tail(x + i, n - i, Plus{});
  }
  const float total = static_cast<float>(sum.total());
  const Vec divisor = Vec{} + total;
  for (i = 0; i + floats <= n; i += floats) store(x + i, load<Vec>(x + i) / divisor);
  for (; i < n; ++i) x[i] /= total;
}

// A row of `dim` values in place: mean and variance in double in eight lanes, (x - mean) / sd in
// double rounded once to float, then times gamma plus beta in float.
template <class Isa>
LENSCHECK_INLINE void layer_norm_row(float* x, size_t dim, const float* gamma, const float* beta, float eps) {
  using D = typename Isa::Doubles;
  using F = typename FloatsOf<D>::type;
  constexpr size_t lanes = lanes_of<D>;
  EightLanes<D> sum, squares;
  size_t i = 0;
  for (; i + 8 <= dim; i += 8) sum.add(x + i, Plus{});
  if (i < dim) sum.add_tail(x + i, dim - i, Plus{});
  const double mean = sum.total() / static_cast<double>(dim);
  const D m = splat<D>(mean);
  const SquaredDistance<Isa> square{mean};
  for (i = 0; i + 8 <= dim; i += 8) squares.add(x + i, square);
  if (i < dim) squares.add_tail(x + i, dim - i, square);
  const double inv = 1.0 / std::sqrt(squares.total() / static_cast<double>(dim) + static_cast<double>(eps));
  for (i = 0; i + lanes <= dim; i += lanes) {
    const F y = __builtin_convertvector((widen<D>(x + i) - m) * inv, F);
    store(x + i, y * load<F>(gamma + i) + load<F>(beta + i));
  }
  for (; i < dim; ++i) x[i] = static_cast<float>((x[i] - mean) * inv) * gamma[i] + beta[i];
}

// A pass over rows of `cols` floats: GELU (erf or tanh) of every value, or a softmax or a
// LayerNorm of every row.
struct Elementwise {
  enum { gelu_erf, gelu_tanh, softmax, layer_norm } function;
  const float* gamma = nullptr;  // LayerNorm's
  const float* beta = nullptr;
  float eps = 0;
};

template <class Isa>
LENSCHECK_INLINE void map_lanes(Elementwise e, float* x, size_t rows, size_t cols) {
  using D = typename Isa::Doubles;
  switch (e.function) {
    case Elementwise::gelu_erf: return map_in_place<D>(x, rows * cols, 0.0f, GeluErf<Isa>{});
    case Elementwise::gelu_tanh: return map_in_place<D>(x, rows * cols, 0.0f, GeluTanh<Isa>{});
    case Elementwise::softmax:
      for (size_t r = 0; r < rows; ++r) softmax_row<Isa>(x + r * cols, cols);
      return;
    case Elementwise::layer_norm:
      for (size_t r = 0; r < rows; ++r) layer_norm_row<Isa>(x + r * cols, cols, e.gamma, e.beta, e.eps);
      return;
  }
}

// Four doubles at a time, or eight with AVX-512; lanes never meet but in the fixed eight-lane sums,
// so every width gives the same bits. Compiled once per instruction set, as multiply() is.
#if defined(__x86_64__)
[[gnu::target("avx512f")]] void map_avx512(Elementwise e, float* x, size_t rows, size_t cols) { map_lanes<Avx512>(e, x, rows, cols); }
[[gnu::target("avx2,fma")]] void map_avx2(Elementwise e, float* x, size_t rows, size_t cols) { map_lanes<Avx2>(e, x, rows, cols); }
#endif
void map_baseline(Elementwise e, float* x, size_t rows, size_t cols) { map_lanes<Baseline>(e, x, rows, cols); }

void map(Elementwise e, float* x, size_t rows, size_t cols) {
  switch (instruction_set()) {
#if defined(__x86_64__)
    case InstructionSet::avx512: return map_avx512(e, x, rows, cols);
    case InstructionSet::avx2: return map_avx2(e, x, rows, cols);
#else
    case InstructionSet::avx512:
    case InstructionSet::avx2:
#endif
    case InstructionSet::baseline: return map_baseline(e, x, rows, cols);
  }
}

// f(begin, end) over [0, n) in contiguous blocks, each a multiple of `grain` long but the last.
template <class F>
void in_blocks(const Workers& workers, size_t n, size_t grain, F f) {
  const size_t grains = (n + grain - 1) / grain,
               parts = std::min<size_t>(kPartsPerThread * workers.threads(), grains);
  workers.run(parts, [&](size_t part) {
    f(std::min(n, grains * part / parts * grain), std::min(n, grains * (part + 1) / parts * grain));
  });
}

InstructionSet parse_instruction_set(std::string_view name) {
  for (InstructionSet set : {InstructionSet::baseline, InstructionSet::avx2, InstructionSet::avx512})
    if (name == instruction_set_name(set)) return set;
  throw std::invalid_argument("LENSCHECK_ISA=" + std::string(name) + ": not one of baseline, avx2, avx512");
}

// The widest set this CPU has, or the one LENSCHECK_ISA names.
InstructionSet initial_instruction_set() {
  InstructionSet widest = InstructionSet::baseline;
  for (InstructionSet set : {InstructionSet::avx2, InstructionSet::avx512})
    if (instruction_set_supported(set)) widest = set;
  const char* forced = std::getenv("LENSCHECK_ISA");
  if (!forced) return widest;
  const InstructionSet set = parse_instruction_set(forced);
  if (!instruction_set_supported(set))
    throw std::invalid_argument(std::string("LENSCHECK_ISA=") + forced + ": this CPU lacks it");
  return set;
}

std::atomic<InstructionSet>& current_instruction_set() {
  static std::atomic<InstructionSet> set{initial_instruction_set()};
  return set;
}

}  // namespace

const char* instruction_set_name(InstructionSet set) {
  switch (set) {
    case InstructionSet::avx512: return "avx512";
    case InstructionSet::avx2: return "avx2";
    case InstructionSet::baseline: break;
  }
  return "baseline";
}

bool instruction_set_supported(InstructionSet set) {
  switch (set) {
#if defined(__x86_64__)
    case InstructionSet::avx512: return __builtin_cpu_supports("avx512f");
    case InstructionSet::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    case InstructionSet::avx512:
    case InstructionSet::avx2: return false;
#endif
    case InstructionSet::baseline: break;
  }
  return true;
}

InstructionSet instruction_set() { return current_instruction_set().load(std::memory_order_relaxed); }

void use_instruction_set(InstructionSet set) {
  if (!instruction_set_supported(set))
    throw std::invalid_argument(std::string(instruction_set_name(set)) + ": this CPU lacks it");
  current_instruction_set() = set;
}

LENSCHECK_KERNEL
PackedWeight pack_weight(const float* wt, size_t in, size_t out) {
  PackedWeight w{in, out, std::vector<float>(packed_size(in, out))};
  pack_panels({wt, out, 1}, in, out, w.panels.data());
  return w;
}

void linear(const float* x, size_t rows, const PackedWeight& w, const float* b, float* y,
            const Workers& workers) {
  multiply({x, w.in, rows, w.in, w.panels.data(), w.in * kPanel, w.out, b, 1.0f, y, w.out}, workers);
}

void head_transform(const float* v, size_t T, size_t H, size_t Dh, const PackedWeight& w,
                    const float* b, float* fx, const Workers& workers) {
  // Head h's rows of the weight are rows h*Dh.. of every panel.
  workers.run(H, [&](size_t h) {
    const Product m{v + h * Dh, H * Dh, T, Dh, w.panels.data() + h * Dh * kPanel, w.in * kPanel, w.out, b,
                    1.0f, fx + h * T * w.out, w.out};
    multiply_runs(m, 0, runs_of(m));
  });
}

void attention_scores(const float* q, const float* k, size_t T, size_t H, size_t Dh, float scale,
                      float* scores, const Workers& workers) {
  const size_t D = H * Dh;
  // Per head, Q_h [T, Dh] times K_h transposed: B(e, b) = k[b * D + h * Dh + e].
  workers.run(H, [&](size_t h) {
    multiply_packing(q + h * Dh, D, T, Dh, {k + h * Dh, 1, D}, T, scale, scores + h * T * T, T);
  });
}

void attend(const float* probs, const float* v, size_t T, size_t H, size_t Dh, float* context,
            const Workers& workers) {
  const size_t D = H * Dh;
  // Per head, P_h [T, T] times V_h [T, Dh] into the head's columns of context.
  workers.run(H, [&](size_t h) {
    multiply_packing(probs + h * T * T, T, T, T, {v + h * Dh, D, 1}, Dh, 1.0f, context + h * Dh, D);
  });
}

// Queries per block of attention(): a multiple of every tile's rows (8, 5 and 4), whose scores at
// T = 512 (160 KiB) stay in L2 with the head's panels of K and V (128 KiB each), where the scores
// of a whole head (1 MiB) would go out to L3 between the product, the softmax and the context.
constexpr size_t kQueryBlock = 80;

void attention(const float* q, const float* k, const float* v, size_t T, size_t H, size_t Dh, float scale,
               float* probs, float* raw_scores, float* context, const Workers& workers) {
  const size_t D = H * Dh, key_floats = packed_size(Dh, T), value_floats = packed_size(T, Dh);
  // Every head's K and V in panels, packed once by the calling thread's workers.
  thread_local std::vector<float> panels;
  panels.resize(std::max(panels.size(), H * (key_floats + value_floats)));
  float* const keys = panels.data();
  float* const values = keys + H * key_floats;
  workers.run(2 * H, [&](size_t part) {
    const size_t h = part / 2;
    if (part % 2 == 0)
      pack_panels({k + h * Dh, 1, D}, Dh, T, keys + h * key_floats);
    else
      pack_panels({v + h * Dh, D, 1}, T, Dh, values + h * value_floats);
  });
  const size_t blocks = (T + kQueryBlock - 1) / kQueryBlock;
  workers.run(H * blocks, [&](size_t part) {
    const size_t h = part / blocks, a0 = part % blocks * kQueryBlock, rows = std::min(kQueryBlock, T - a0);
    thread_local std::vector<float> block;  // the block's probabilities, where probs is null
    if (!probs) block.resize(std::max(block.size(), rows * T));
    float* const p = probs ? probs + (h * T + a0) * T : block.data();
    const Product scores{q + a0 * D + h * Dh, D, rows, Dh, keys + h * key_floats, Dh * kPanel, T, nullptr, scale, p, T};
    multiply_runs(scores, 0, runs_of(scores));
    if (raw_scores) std::copy_n(p, rows * T, raw_scores + (h * T + a0) * T);
    map({Elementwise::softmax}, p, rows, T);
    const Product attended{p, T, rows, T, values + h * value_floats, T * kPanel, Dh, nullptr, 1.0f,
                           context + a0 * D + h * Dh, D};
    multiply_runs(attended, 0, runs_of(attended));
  });
}

LENSCHECK_KERNEL
void weight_by_key(const float* probs, const float* key_weight, size_t H, size_t T, float* out) {
  for (size_t h = 0; h < H; ++h)
    for (size_t a = 0; a < T; ++a)
      for (size_t b = 0; b < T; ++b)
        out[(h * T + a) * T + b] = probs[(h * T + a) * T + b] * key_weight[h * T + b];
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

void layer_norm(float* x, size_t rows, size_t dim, const float* gamma, const float* beta, float eps,
                const Workers& workers) {
  in_blocks(workers, rows, 1, [&](size_t first, size_t end) {
    map({Elementwise::layer_norm, gamma, beta, eps}, x + first * dim, end - first, dim);
  });
}

void softmax_rows(float* x, size_t rows, size_t cols, const Workers& workers) {
  in_blocks(workers, rows, 1, [&](size_t first, size_t end) { map({Elementwise::softmax}, x + first * cols, end - first, cols); });
}

// Blocks of whole vectors: each element's value does not depend on where it sits anyway.
constexpr size_t kMapGrain = 64;

void gelu_erf(float* x, size_t n, const Workers& workers) {
  in_blocks(workers, n, kMapGrain, [&](size_t first, size_t end) { map({Elementwise::gelu_erf}, x + first, 1, end - first); });
}

void gelu_tanh(float* x, size_t n, const Workers& workers) {
  in_blocks(workers, n, kMapGrain, [&](size_t first, size_t end) { map({Elementwise::gelu_tanh}, x + first, 1, end - first); });
}

LENSCHECK_KERNEL
void relu(float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = std::max(x[i], 0.0f);
}

LENSCHECK_KERNEL
float l2_norm(const float* x, size_t n) {
  return static_cast<float>(std::sqrt(sum_of_products(x, x, n, 0.0)));
}

}  // namespace lenscheck::runtime
