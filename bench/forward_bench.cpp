// The runtime's forward pass against libtorch, and against this core's fp32 peak. Each of them runs
// four ways (model/trace.h Record): with the full trace; keeping only what the instrument shows, without
// and with the residual lens (Kobayashi et al. 2021); and as a plain forward that keeps the last layer's output alone, as libtorch's users run it.
// Every figure of the closing tables is a ratio of medians measured in this one run: all
// repetitions are interleaved at random, so a noisy neighbour slows both sides alike. The plain
// forward also runs on two threads (runtime2_plain: the encoder's own workers); ONNX Runtime is
// measured beside it by bench/versus_onnxruntime.sh, which runs this binary.
//
//   build/bench/forward_bench --model build/fixtures/bert-mini [--repetitions 7] [--benchmark_*]
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/tokenizer.h"
#include "oracle/oracle.h"
#include "runtime/encoder.h"

namespace {

using namespace lenscheck;

constexpr size_t kLengths[] = {16, 128, 512};
// Issue 7: runtime time / libtorch time, full trace, must not exceed these.
constexpr double kTargets[] = {0.5, 1.0, 1.0};
constexpr std::pair<const char*, Record> kModes[] = {{"trace", Record::everything},
                                                     {"instrument", Record::instrument},
                                                     {"instrument_residual", Record::instrument_residual},
                                                     {"plain", Record::output}};

// [CLS], the sentence's pieces repeated to fill `tokens`, [SEP]; each piece its own word.
Encoding encoding_of_length(const BertTokenizer& tokenizer, size_t tokens) {
  const Encoding sentence = tokenizer.encode("The nurse handed the doctor the scissors.", 512);
  const std::vector<int64_t> pieces(sentence.ids.begin() + 1, sentence.ids.end() - 1);
  const Vocab& vocab = tokenizer.vocab();
  Encoding e;
  auto push = [&](int64_t id, int word) {
    e.ids.push_back(id);
    e.tokens.push_back(vocab.token(static_cast<int>(id)));
    e.word_ids.push_back(word);
    if (word >= 0) e.words.push_back(e.tokens.back());
  };
  push(vocab.cls_id(), -1);
  for (size_t i = 0; i + 2 < tokens; ++i) push(pieces[i % pieces.size()], static_cast<int>(i));
  push(vocab.sep_id(), -1);
  return e;
}

// Flop of one forward that keeps what the instrument shows (a multiply-add counts two): the linear
// layers, scores and context, and f(x) = v W_O[h] of every head and token. Softmax, LayerNorm,
// GELU and the norms are O(T·D) and left out; so is the head-summed lens of the full trace.
double instrument_flops(const BertConfig& c, size_t tokens) {
  const double T = static_cast<double>(tokens), D = c.hidden_size, I = c.intermediate_size,
               H = c.num_attention_heads, Dh = D / H;
  const double per_layer = 2 * T * D * 3 * D      // query, key, value
                           + 2 * H * T * T * Dh   // scores
                           + 2 * H * T * T * Dh   // context
                           + 2 * T * D * D        // attention output
                           + 2 * T * D * D        // f(x) of every head and token
                           + 2 * 2 * T * D * I;   // intermediate and output
  return per_layer * c.num_hidden_layers;
}

#if defined(__x86_64__)
// Independent accumulator chains keep both FMA pipes busy; `one` and `zero` are opaque, so the
// values never change and nothing folds. Each loop runs at one vector width: AVX2 (8 floats) and,
// where the CPU has it, AVX-512 (16 floats), whose kernels the runtime then uses.
constexpr int kChains = 6;
constexpr long kPeakSteps = 1 << 16;

__attribute__((target("avx2,fma"))) float fma_loop_avx2(float one, float zero) {
  const __m256 a = _mm256_set1_ps(one), b = _mm256_set1_ps(zero);
  __m256 acc[2 * kChains];
  for (auto& x : acc) x = _mm256_set1_ps(1.0f);
  for (long s = 0; s < kPeakSteps; ++s)
    for (auto& x : acc) x = _mm256_fmadd_ps(x, a, b);
  float out = 0;
  for (auto& x : acc) out += _mm256_cvtss_f32(x);
  return out;
}

__attribute__((target("avx512f"))) float fma_loop_avx512(float one, float zero) {
  const __m512 a = _mm512_set1_ps(one), b = _mm512_set1_ps(zero);
  __m512 acc[2 * kChains];
  for (auto& x : acc) x = _mm512_set1_ps(1.0f);
  for (long s = 0; s < kPeakSteps; ++s)
    for (auto& x : acc) x = _mm512_fmadd_ps(x, a, b);
  float out = 0;
  for (auto& x : acc) out += _mm512_cvtss_f32(x);
  return out;
}

// Flop of one call: per step, 2 × kChains FMAs of `lanes`.
constexpr double fma_loop_flops(int lanes) { return 2.0 * kChains * lanes * 2 * kPeakSteps; }

struct PeakLoop {
  const char* isa;
  int lanes;
  float (*fma)(float, float);
};
#endif

// Keeps the medians of real time (seconds per iteration) and CPU time, by benchmark name.
class MedianReporter : public benchmark::ConsoleReporter {
 public:
  struct Median {
    double real_s = 0, cpu_s = 0;
  };
  std::map<std::string, Median> medians;

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs)
      if (r.aggregate_name == "median") {
        const double unit = benchmark::GetTimeUnitMultiplier(r.time_unit);
        medians[r.run_name.function_name] = {r.GetAdjustedRealTime() / unit,
                                             r.GetAdjustedCPUTime() / unit};
      }
  }
};

std::string flag_value(int& argc, char** argv, const char* name, std::string fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) {
      fallback = argv[i + 1];
      for (int j = i; j + 2 <= argc; ++j) argv[j] = argv[j + 2];
      argc -= 2;
      break;
    }
  return fallback;
}

}  // namespace

// The report's tables from the medians: runtime against libtorch per record mode, and against the
// measured fp32 peak (0: not measured); a warning where libtorch ran on more than one core.
void print_tables(std::map<std::string, MedianReporter::Median>& m, const BertConfig& config, double peak) {
  auto have = [&](const std::string& T) {
    for (const auto& [mode, record] : kModes)
      if (!m.count(fmt::format("oracle_{}/T={}", mode, T)) || !m.count(fmt::format("runtime_{}/T={}", mode, T)))
        return false;  // a --benchmark_filter left it out
    return true;
  };
  auto ratio = [&](const std::string& mode, const std::string& T) {
    return m[fmt::format("runtime_{}/T={}", mode, T)].real_s / m[fmt::format("oracle_{}/T={}", mode, T)].real_s;
  };
  auto ms = [&](const std::string& name) { return 1e3 * m[name].real_s; };
  std::printf("\nRuntime / libtorch, the same record mode on both sides:\n\n");
  std::printf("| T | full trace: oracle | runtime | runtime / oracle | target | instrument only: oracle | "
              "runtime | ratio | with the residual lens: oracle | runtime | ratio | plain forward: libtorch | runtime | "
              "ratio |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < std::size(kLengths); ++i) {
    const std::string T = std::to_string(kLengths[i]);
    if (!have(T)) continue;
    const double full = ratio("trace", T);
    std::printf("| %s | %.2f ms | %.2f ms | %.2f× %s | ≤ %.1f× | %.2f ms | %.2f ms | %.2f× | %.2f ms | %.2f ms | %.2f× "
                "| %.2f ms | %.2f ms | %.2f× |\n",
                T.c_str(), ms("oracle_trace/T=" + T), ms("runtime_trace/T=" + T), full,
                full <= kTargets[i] ? "met" : "MISSED", kTargets[i], ms("oracle_instrument/T=" + T),
                ms("runtime_instrument/T=" + T), ratio("instrument", T), ms("oracle_instrument_residual/T=" + T),
                ms("runtime_instrument_residual/T=" + T), ratio("instrument_residual", T), ms("oracle_plain/T=" + T),
                ms("runtime_plain/T=" + T), ratio("plain", T));
  }
  std::printf("\nRuntime keeping what the instrument shows, against the fp32 peak:\n\n");
  std::printf("| T | runtime | GFLOP/s | %% of fp32 peak |\n|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < std::size(kLengths); ++i) {
    const std::string T = std::to_string(kLengths[i]);
    if (!have(T)) continue;
    const double gflops = instrument_flops(config, kLengths[i]) / m["runtime_instrument/T=" + T].real_s / 1e9;
    const std::string share = peak > 0 ? std::to_string(std::lround(100 * gflops / peak)) + " %" : "n/a";
    std::printf("| %s | %.2f ms | %.1f | %s |\n", T.c_str(), ms("runtime_instrument/T=" + T), gflops, share.c_str());
  }
  for (const auto& [name, med] : m)
    if (name.starts_with("oracle") && med.cpu_s > 1.2 * med.real_s)
      std::printf("warning: %s used %.1f cores; set OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1\n",
                  name.c_str(), med.cpu_s / med.real_s);
}

int main(int argc, char** argv) {
  // Both sides allocate their traces afresh in every forward, up to hundreds of MiB at T = 512.
  // glibc would give that memory back to the kernel after each forward and page-fault it in again
  // in the next, a cost that swamps the arithmetic and varies by tens of percent from run to run.
  // Freed memory stays in the process instead, for the oracle and the runtime alike.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  const std::string model = flag_value(argc, argv, "--model", LENSCHECK_FIXTURE_DIR "/bert-mini");
  const int repetitions = std::stoi(flag_value(argc, argv, "--repetitions", "7"));
  std::vector<char*> args(argv, argv + argc);
  char interleave[] = "--benchmark_enable_random_interleaving=true";
  args.insert(args.begin() + 1, interleave);  // the caller's own flags, later, still win
  int args_count = static_cast<int>(args.size());
  benchmark::Initialize(&args_count, args.data());
  if (benchmark::ReportUnrecognizedArguments(args_count, args.data())) return 2;

  const Checkpoint ck = load_checkpoint(model);
  oracle::Oracle::set_threads(1);
  const oracle::Oracle oracle(ck.config, ck.weights, oracle::Precision::fp32);
  const runtime::Encoder encoder(ck.config, ck.weights);
  const runtime::Encoder two_threads(ck.config, ck.weights, 2);
  const BertTokenizer tokenizer(ck.vocab, ck.tokenizer);
  std::vector<Encoding> inputs;
  for (size_t T : kLengths) inputs.push_back(encoding_of_length(tokenizer, T));

  // Each benchmark first runs one forward untimed: the first forward at a length pages in its
  // buffers (the instrument-only forward at T = 512 took 300 ms, not 38, on a 2-vCPU VM: 76 000
  // page faults), and where one call outlasts MinTime, Google Benchmark times that call alone.
  // `flop`, where given, is one call's count, for bench/versus_onnxruntime.sh.
  auto add = [&](const std::string& name, auto forward, double flop = 0) {
    auto body = [forward, flop](benchmark::State& s) {
      forward();
      for (auto _ : s) forward();
      if (flop > 0) s.counters["flop"] = flop;
    };
    benchmark::RegisterBenchmark(name.c_str(), body)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->MinTime(0.2)
        ->Repetitions(repetitions)
        ->ReportAggregatesOnly(true);
  };
#if defined(__x86_64__)
  // The widest vectors this CPU has set its peak: AVX-512 where there is one, AVX2 otherwise.
  std::vector<PeakLoop> peak_loops;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) peak_loops.push_back({"avx2", 8, fma_loop_avx2});
  if (__builtin_cpu_supports("avx512f")) peak_loops.push_back({"avx512", 16, fma_loop_avx512});
  static volatile float one = 1.0f, zero = 0.0f;
  for (const PeakLoop& loop : peak_loops)
    add(fmt::format("peak/{}_fma", loop.isa), [&loop] { benchmark::DoNotOptimize(loop.fma(one, zero)); },
        fma_loop_flops(loop.lanes));
#endif
  for (const Encoding& e : inputs) {
    const std::string T = std::to_string(e.ids.size());
    for (const auto& [mode, record] : kModes) {
      add(fmt::format("oracle_{}/T={}", mode, T), [&, record] { benchmark::DoNotOptimize(oracle.forward(e, record)); });
      add(fmt::format("runtime_{}/T={}", mode, T), [&, record] { benchmark::DoNotOptimize(encoder.forward(e, record)); },
          record == Record::instrument ? instrument_flops(ck.config, e.ids.size()) : 0);
    }
    add(fmt::format("runtime2_plain/T={}", T), [&] { benchmark::DoNotOptimize(two_threads.forward(e, Record::output)); });
  }

  MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  auto& m = reporter.medians;
  std::printf("\noracle: %s\nruntime kernels: %s\n", oracle::Oracle::backend().c_str(),
              runtime::instruction_set_name(runtime::instruction_set()));
  double peak = 0;  // 0: not measured on this architecture, or filtered out
#if defined(__x86_64__)
  for (const PeakLoop& loop : peak_loops) {
    const std::string fma = fmt::format("peak/{}_fma", loop.isa);
    if (!m.count(fma)) continue;
    const double gflops = fma_loop_flops(loop.lanes) / m[fma].real_s / 1e9;
    std::printf("fp32 rate of one core, %s: %.1f GFLOP/s with FMA\n", loop.isa, gflops);
    peak = std::max(peak, gflops);
  }
  if (peak > 0) std::printf("fp32 peak of one core, measured: %.1f GFLOP/s\n", peak);
#endif
  std::printf("medians of %d repetitions, single thread, wall clock\n", repetitions);
  print_tables(m, ck.config, peak);
  return 0;
}
