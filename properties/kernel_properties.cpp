// The runtime's kernels (runtime/kernels.h) against the plain loops they stand for, bit for bit,
// over random shapes, on every instruction set this CPU has (each case runs on all of them) and on
// one and three threads: the blocked products add each output's terms in ascending order by fused
// multiply-adds, whatever the tiling, the tile remainders, the vector width and the thread that
// computes them; and an element-wise function gives a value the same bits wherever it sits in a
// buffer and on every width, so the lanes of a vector never meet.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "properties/generators.h"
#include "runtime/kernels.h"

namespace lenscheck::runtime {
namespace {

// Values over sixteen binades, so that the order of a sum shows in its rounding.
std::vector<float> spread_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-8, 8);
  std::vector<float> v(n);
  for (float& x : v) x = std::ldexp(normal(rng), exponent(rng));
  return v;
}

using prop::same_bits;

// Each instruction set this CPU has, made the process's while `check` runs.
template <class Check>
void on_every_instruction_set(Check check) {
  const InstructionSet chosen = instruction_set();
  for (InstructionSet set : {InstructionSet::baseline, InstructionSet::avx2, InstructionSet::avx512}) {
    if (!instruction_set_supported(set)) continue;
    use_instruction_set(set);
    check();
  }
  use_instruction_set(chosen);
}

const Workers& three_threads() {
  static const Workers workers(3);
  return workers;
}

// The plain loop: c[r, o] = fma(a(r, in-1), b(in-1, o), ... fma(a(r, 0), b(0, o), init[o])) * scale,
// each multiply-add rounded once to float.
template <class A, class B>
std::vector<float> plain_product(size_t rows, size_t in, size_t out, A a, B b, const float* init, float scale) {
  std::vector<float> c(rows * out);
  for (size_t r = 0; r < rows; ++r)
    for (size_t o = 0; o < out; ++o) {
      float acc = init ? init[o] : 0.0f;
      for (size_t i = 0; i < in; ++i) acc = std::fma(a(r, i), b(i, o), acc);
      c[r * out + o] = acc * scale;
    }
  return c;
}

// Rows 1-20 cover every remainder of the 4-, 6- and 8-row tiles; widths 1-40 full and partial
// panels and runs of two; inputs up to 600 one, two and three blocks of 256.
RC_GTEST_PROP(Kernels, LinearIsThePlainLoopBitForBit, ()) {
  const auto rows = size_t(*rc::gen::inRange(1, 21)), in = size_t(*rc::gen::inRange(1, 600)),
             out = size_t(*rc::gen::inRange(1, 41));
  const bool biased = *rc::gen::arbitrary<bool>();
  const auto seed = *rc::gen::arbitrary<uint32_t>();
  const std::vector<float> x = spread_values(rows * in, seed), wt = spread_values(in * out, seed + 1),
                           bias = spread_values(out, seed + 2);
  const auto expected = plain_product(
      rows, in, out, [&](size_t r, size_t i) { return x[r * in + i]; },
      [&](size_t i, size_t o) { return wt[i * out + o]; }, biased ? bias.data() : nullptr, 1.0f);
  const PackedWeight packed = pack_weight(wt.data(), in, out);
  on_every_instruction_set([&] {
    for (const Workers* workers : {&one_thread(), &three_threads()}) {
      std::vector<float> y(rows * out);
      linear(x.data(), rows, packed, biased ? bias.data() : nullptr, y.data(), *workers);
      RC_ASSERT(same_bits(y, expected));
    }
  });
}

RC_GTEST_PROP(Kernels, HeadTransformIsThePlainLoopBitForBit, ()) {
  const auto T = size_t(*rc::gen::inRange(1, 21)), H = size_t(*rc::gen::inRange(1, 5)),
             Dh = size_t(*rc::gen::inRange(1, 17)), out = size_t(*rc::gen::inRange(1, 41));
  const auto seed = *rc::gen::arbitrary<uint32_t>();
  const size_t D = H * Dh;
  const std::vector<float> v = spread_values(T * D, seed), wt = spread_values(D * out, seed + 1),
                           bias = spread_values(out, seed + 2);
  const PackedWeight packed = pack_weight(wt.data(), D, out);
  on_every_instruction_set([&] {
    std::vector<float> fx(H * T * out);
    head_transform(v.data(), T, H, Dh, packed, bias.data(), fx.data(), three_threads());
    for (size_t h = 0; h < H; ++h) {
      const auto expected = plain_product(
          T, Dh, out, [&](size_t t, size_t e) { return v[t * D + h * Dh + e]; },
          [&](size_t e, size_t o) { return wt[(h * Dh + e) * out + o]; }, bias.data(), 1.0f);
      const std::vector<float> head(fx.begin() + long(h * T * out), fx.begin() + long((h + 1) * T * out));
      RC_ASSERT(same_bits(head, expected));
    }
  });
}

RC_GTEST_PROP(Kernels, AttentionScoresAndContextAreThePlainLoopsBitForBit, ()) {
  const auto T = size_t(*rc::gen::inRange(1, 41)), H = size_t(*rc::gen::inRange(1, 5)),
             Dh = size_t(*rc::gen::inRange(1, 20));
  const auto seed = *rc::gen::arbitrary<uint32_t>();
  const size_t D = H * Dh;
  const std::vector<float> q = spread_values(T * D, seed), k = spread_values(T * D, seed + 1),
                           v = spread_values(T * D, seed + 2), probs = spread_values(H * T * T, seed + 3);
  const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
  on_every_instruction_set([&] {
    std::vector<float> scores(H * T * T), context(T * D);
    attention_scores(q.data(), k.data(), T, H, Dh, scale, scores.data(), three_threads());
    attend(probs.data(), v.data(), T, H, Dh, context.data(), three_threads());
    for (size_t h = 0; h < H; ++h) {
      const auto expected_scores = plain_product(
          T, Dh, T, [&](size_t a, size_t e) { return q[a * D + h * Dh + e]; },
          [&](size_t e, size_t b) { return k[b * D + h * Dh + e]; }, nullptr, scale);
      const std::vector<float> head(scores.begin() + long(h * T * T), scores.begin() + long((h + 1) * T * T));
      RC_ASSERT(same_bits(head, expected_scores));
      const auto expected_context = plain_product(
          T, T, Dh, [&](size_t a, size_t b) { return probs[(h * T + a) * T + b]; },
          [&](size_t b, size_t e) { return v[b * D + h * Dh + e]; }, nullptr, 1.0f);
      std::vector<float> head_context(T * Dh);
      for (size_t a = 0; a < T; ++a)
        for (size_t e = 0; e < Dh; ++e) head_context[a * Dh + e] = context[a * D + h * Dh + e];
      RC_ASSERT(same_bits(head_context, expected_context));
    }
  });
}

// Up to 200 queries: one, two and three blocks of the fused kernel, and partial ones.
RC_GTEST_PROP(Kernels, FusedAttentionIsScoresSoftmaxContextInTurnBitForBit, ()) {
  const auto T = size_t(*rc::gen::inRange(1, 201)), H = size_t(*rc::gen::inRange(1, 4)),
             Dh = size_t(*rc::gen::inRange(1, 20));
  const auto seed = *rc::gen::arbitrary<uint32_t>();
  const size_t D = H * Dh;
  const std::vector<float> q = spread_values(T * D, seed), k = spread_values(T * D, seed + 1),
                           v = spread_values(T * D, seed + 2);
  const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
  std::vector<float> scores(H * T * T), probs(H * T * T), context(T * D);
  attention_scores(q.data(), k.data(), T, H, Dh, scale, scores.data());
  probs = scores;
  softmax_rows(probs.data(), H * T, T);
  attend(probs.data(), v.data(), T, H, Dh, context.data());
  on_every_instruction_set([&] {
    std::vector<float> fused_raw(H * T * T), fused_probs(H * T * T), fused_context(T * D), plain_context(T * D);
    attention(q.data(), k.data(), v.data(), T, H, Dh, scale, fused_probs.data(), fused_raw.data(),
              fused_context.data(), three_threads());
    RC_ASSERT(same_bits(fused_raw, scores));
    RC_ASSERT(same_bits(fused_probs, probs));
    RC_ASSERT(same_bits(fused_context, context));
    attention(q.data(), k.data(), v.data(), T, H, Dh, scale, nullptr, nullptr, plain_context.data(), one_thread());
    RC_ASSERT(same_bits(plain_context, context));
  });
}

// GELU's inputs: mostly where erf's two branches meet (|x| around 2 sqrt 2), some far out, and
// now and then a NaN or an infinity, which sends its whole vector down the erfc branch.
std::vector<float> gelu_inputs(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::uniform_int_distribution<int> pick(0, 31);
  std::vector<float> x(n);
  for (float& e : x) switch (pick(rng)) {
      case 0: e = std::numeric_limits<float>::quiet_NaN(); break;
      case 1: e = -std::numeric_limits<float>::infinity(); break;
      case 2: e = normal(rng) * 1e4f; break;
      default: e = normal(rng);
    }
  return x;
}

RC_GTEST_PROP(Kernels, GeluOfAValueDoesNotDependOnItsNeighbours, ()) {
  const auto n = size_t(*rc::gen::inRange(1, 40));
  const bool erf = *rc::gen::arbitrary<bool>();
  const std::vector<float> x = gelu_inputs(n, *rc::gen::arbitrary<uint32_t>());
  auto gelu = [erf](float* values, size_t count, const Workers& workers) {
    (erf ? gelu_erf : gelu_tanh)(values, count, workers);
  };
  std::vector<float> alone = x;
  for (float& e : alone) gelu(&e, 1, one_thread());
  on_every_instruction_set([&] {
    std::vector<float> together = x;
    gelu(together.data(), n, three_threads());
    RC_ASSERT(same_bits(together, alone));
  });
}

}  // namespace
}  // namespace lenscheck::runtime
