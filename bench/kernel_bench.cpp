// Each hot loop of runtime/kernels.h at the shapes BERT-mini gives it (hidden 256, 4 heads of 64,
// intermediate 1024), for T = 16, 128, 512 tokens: where a forward pass spends its time.
//
//   build/bench/kernel_bench [--benchmark_filter=linear]
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "runtime/kernels.h"

namespace {

using namespace lenscheck::runtime;

constexpr size_t D = 256, H = 4, Dh = 64, I = 1024;

std::vector<float> random_values(size_t n, float scale, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Rows that sum to 1, like attention probabilities.
std::vector<float> probabilities(size_t rows, size_t cols) {
  std::vector<float> p = random_values(rows * cols, 1.0f, 7);
  softmax_rows(p.data(), rows, cols);
  return p;
}

void report(benchmark::State& state, double flops_per_call) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops_per_call * static_cast<double>(state.iterations()) / 1e9,
                         benchmark::Counter::kIsRate);
}

void linear_shape(benchmark::State& state, size_t in, size_t out) {
  const size_t T = static_cast<size_t>(state.range(0));
  const auto x = random_values(T * in, 1.0f, 1), wt = random_values(in * out, 0.02f, 2),
             b = random_values(out, 0.02f, 3);
  const PackedWeight packed = pack_weight(wt.data(), in, out);
  std::vector<float> y(T * out);
  for (auto _ : state) {
    linear(x.data(), T, packed, b.data(), y.data());
    benchmark::DoNotOptimize(y.data());
  }
  report(state, 2.0 * static_cast<double>(T * in * out));
}

void linear_qkv(benchmark::State& s) { linear_shape(s, D, D); }
void linear_intermediate(benchmark::State& s) { linear_shape(s, D, I); }
void linear_output(benchmark::State& s) { linear_shape(s, I, D); }

// f(x) = v W_O[h] of every head and token.
void transform(benchmark::State& state) {
  const size_t T = static_cast<size_t>(state.range(0));
  const auto v = random_values(T * D, 1.0f, 1), wt = random_values(D * D, 0.02f, 2);
  const PackedWeight packed = pack_weight(wt.data(), D, D);
  std::vector<float> fx(H * T * D);
  for (auto _ : state) {
    head_transform(v.data(), T, H, Dh, packed, nullptr, fx.data());
    benchmark::DoNotOptimize(fx.data());
  }
  report(state, 2.0 * static_cast<double>(T * D * D));
}

void scores(benchmark::State& state) {
  const size_t T = static_cast<size_t>(state.range(0));
  const auto q = random_values(T * D, 1.0f, 1), k = random_values(T * D, 1.0f, 2);
  std::vector<float> s(H * T * T);
  for (auto _ : state) {
    attention_scores(q.data(), k.data(), T, H, Dh, 0.125f, s.data());
    benchmark::DoNotOptimize(s.data());
  }
  report(state, 2.0 * static_cast<double>(H * T * T * Dh));
}

void softmax(benchmark::State& state) {
  const size_t T = static_cast<size_t>(state.range(0));
  const auto s = random_values(H * T * T, 1.0f, 1);
  std::vector<float> p(s.size());
  for (auto _ : state) {
    p = s;
    softmax_rows(p.data(), H * T, T);
    benchmark::DoNotOptimize(p.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * s.size()));
}

void context(benchmark::State& state) {
  const size_t T = static_cast<size_t>(state.range(0));
  const auto p = probabilities(H * T, T), v = random_values(T * D, 1.0f, 2);
  std::vector<float> c(T * D);
  for (auto _ : state) {
    attend(p.data(), v.data(), T, H, Dh, c.data());
    benchmark::DoNotOptimize(c.data());
  }
  report(state, 2.0 * static_cast<double>(H * T * T * Dh));
}

void norm(benchmark::State& state) {
  const size_t T = static_cast<size_t>(state.range(0));
  const auto x = random_values(T * D, 1.0f, 1), g = random_values(D, 1.0f, 2),
             b = random_values(D, 1.0f, 3);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    y = x;
    layer_norm(y.data(), T, D, g.data(), b.data(), 1e-12f);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * x.size()));
}

void gelu(benchmark::State& state) {
  const size_t T = static_cast<size_t>(state.range(0));
  const auto x = random_values(T * I, 0.5f, 1);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    y = x;
    gelu_erf(y.data(), y.size());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * x.size()));
}

// ‖v‖ and ‖f(x)‖ of every head and token.
void norms(benchmark::State& state) {
  const size_t T = static_cast<size_t>(state.range(0));
  const auto fx = random_values(H * T * D, 1.0f, 1);
  std::vector<float> n(2 * H * T);
  for (auto _ : state) {
    for (size_t r = 0; r < H * T; ++r) {
      n[r] = l2_norm(fx.data() + r * D, Dh);
      n[H * T + r] = l2_norm(fx.data() + r * D, D);
    }
    benchmark::DoNotOptimize(n.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * H * T * (Dh + D)));
}

void lens_weights(benchmark::State& state) {
  const size_t T = static_cast<size_t>(state.range(0));
  const auto p = probabilities(H * T, T), w = random_values(H * T, 1.0f, 2);
  std::vector<float> out(p.size());
  for (auto _ : state) {
    weight_by_key(p.data(), w.data(), H, T, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * p.size()));
}

void summed_norm(benchmark::State& state) {
  const size_t T = static_cast<size_t>(state.range(0));
  const auto p = probabilities(H * T, T), fx = random_values(H * T * D, 1.0f, 2);
  std::vector<float> out(T * T);
  for (auto _ : state) {
    summed_transformed_norm(p.data(), fx.data(), H, T, D, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * T * T));
}

}  // namespace

#define SHAPES ->Arg(16)->Arg(128)->Arg(512)->Unit(benchmark::kMicrosecond)
BENCHMARK(linear_qkv) SHAPES;
BENCHMARK(linear_intermediate) SHAPES;
BENCHMARK(linear_output) SHAPES;
BENCHMARK(transform) SHAPES;
BENCHMARK(scores) SHAPES;
BENCHMARK(softmax) SHAPES;
BENCHMARK(context) SHAPES;
BENCHMARK(norm) SHAPES;
BENCHMARK(gelu) SHAPES;
BENCHMARK(norms) SHAPES;
BENCHMARK(lens_weights) SHAPES;
BENCHMARK(summed_norm) SHAPES;
BENCHMARK_MAIN();
