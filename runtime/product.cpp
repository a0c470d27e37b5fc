// Matrix products (kernels.h: linear, head_transform, attention_scores, attend, attention), compiled
// once per instruction set.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "runtime/kernels.h"
#include "runtime/simd.h"

namespace lenscheck::runtime {

using namespace simd;

namespace {

// ---- Matrix products -----------------------------------------------------------------------
// Every output is c[r, o] = fma(a[r, in-1], b[in-1, o], ... fma(a[r, 0], b[0, o], init[o])) * scale:
// one fused multiply-add per term, in ascending i, exactly the plain loop's, whatever the tiling.
// A fused multiply-add rounds once at every vector width (std::fma in scalar code too), so every
// instruction set gives the same bits. Tiles of Rows rows × Panels panels of kPanel outputs keep
// their sums in registers; B is first copied into panels of kPanel columns, each a run of
// contiguous rows.


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

// The runs of panels of this instruction set's tile, which threads share out.
size_t runs_of(const Product& m) { return isa_kernels().runs(m); }
void multiply_runs(const Product& m, size_t first, size_t end) { isa_kernels().multiply(m, first, end); }

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

}  // namespace

// The tile's shape and fused multiply-add are the instruction set's, so the product is compiled
// once per set, and the one this process uses is chosen at start-up (isa_kernels()).
namespace simd {
#if defined(__x86_64__)
[[gnu::target("avx512f")]] void multiply_avx512(const Product& m, size_t first, size_t end) {
  multiply_tiled<Avx512>(m, first, end);
}
[[gnu::target("avx2,fma")]] void multiply_avx2(const Product& m, size_t first, size_t end) {
  multiply_tiled<Avx2>(m, first, end);
}
#endif
void multiply_baseline(const Product& m, size_t first, size_t end) { multiply_tiled<Baseline>(m, first, end); }
size_t runs_avx512(const Product& m) { return panel_runs<Avx512>(m); }
size_t runs_avx2(const Product& m) { return panel_runs<Avx2>(m); }
size_t runs_baseline(const Product& m) { return panel_runs<Baseline>(m); }
}  // namespace simd

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
    isa_kernels().map({Elementwise::softmax}, p, rows, T);
    const Product attended{p, T, rows, T, values + h * value_floats, T * kPanel, Dh, nullptr, 1.0f,
                           context + a0 * D + h * Dh, D};
    multiply_runs(attended, 0, runs_of(attended));
  });
}

}  // namespace lenscheck::runtime
