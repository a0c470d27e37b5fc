// Element-wise kernels (kernels.h: layer_norm, softmax_rows, gelu_erf, gelu_tanh, relu): computed in
// double, rounded once to float, compiled once per instruction set.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <numbers>

#include "runtime/kernels.h"
#include "runtime/simd.h"

namespace lenscheck::runtime {

using namespace simd;

namespace {

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

}  // namespace

// Four doubles at a time, or eight with AVX-512; lanes never meet but in the fixed eight-lane sums,
// so every width gives the same bits. Compiled once per instruction set, as the product is.
namespace simd {
#if defined(__x86_64__)
[[gnu::target("avx512f")]] void map_avx512(Elementwise e, float* x, size_t rows, size_t cols) { map_lanes<Avx512>(e, x, rows, cols); }
[[gnu::target("avx2,fma")]] void map_avx2(Elementwise e, float* x, size_t rows, size_t cols) { map_lanes<Avx2>(e, x, rows, cols); }
#endif
void map_baseline(Elementwise e, float* x, size_t rows, size_t cols) { map_lanes<Baseline>(e, x, rows, cols); }
}  // namespace simd

namespace {
void map(Elementwise e, float* x, size_t rows, size_t cols) { isa_kernels().map(e, x, rows, cols); }
}  // namespace

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

}  // namespace lenscheck::runtime
