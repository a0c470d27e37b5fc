// Properties of the two encoders over random small models, up to BERT-base's depth and with trained
// statistics (sharp attention, LayerNorm outlier dimensions), and token sequences: the runtime raises
// no false alarm under the derived gate, whose verdict does not depend on a tensor's scale; attention
// is a distribution, V = 0 leaves the norm lenses undefined rather than NaN, heads are
// interchangeable, and the trace is the same bits on every thread count and instruction set.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cfloat>
#include <cmath>

#include "gate/compare.h"
#include "gate/tolerances.h"
#include "gate/verify.h"
#include "oracle/oracle.h"
#include "properties/generators.h"
#include "runtime/encoder.h"
#include "instrument/rows.h"
#include "tests/test_support.h"

namespace lenscheck {
namespace {

using oracle::Oracle;
using oracle::Precision;

const Tolerances& committed_tolerances() {
  static const Tolerances t = load_tolerances(test::source_dir() / "fixtures/tolerances.yaml");
  return t;
}

// The oracle single-threaded, so that a failure reproduces from its seed.
Trace oracle_trace(const BertConfig& config, const BertWeights& weights, Precision precision,
                   const Encoding& input) {
  Oracle::set_threads(1);
  return Oracle(config, weights, precision).forward(input);
}

// The first failing tensor in forward order, with its worst element and the rule it broke.
std::string divergence(const TraceComparison& c) {
  if (!c.problem.empty()) return c.problem;
  const TensorComparison* t = c.first_divergence();
  if (!t) return "the comparison covers no tensor";
  if (!t->problem.empty()) return t->name + ": " + t->problem;
  if (t->derived)
    return fmt::format("{}: error {:.3g} is {:.3g}x libtorch fp32's {:.3g} (floor {:.3g}; k {:g}, tolerances line {}); "
                       "worst element {}: {:.9g} vs truth {:.9g}{}", t->name, t->derived->candidate_error,
                       t->derived->ratio, t->derived->benchmark_error, t->derived->floor, t->tolerance.k,
                       t->tolerance.line, t->worst_label, t->worst_candidate, t->worst_reference,
                       t->local ? fmt::format("; locally, error {:.3g} is {:.3g}x the op's own rounding spread {:.3g} "
                                              "(floor {:.3g})", t->local->candidate_error, t->local->ratio,
                                              t->local->benchmark_error, t->local->floor)
                                : "");
  return fmt::format("{} {}: {:.9g} vs reference {:.9g}, |diff| {:.3g} is {:.3g} x the bound "
                     "(atol {:g} + rtol {:g} |ref|); {} of {} elements fail",
                     t->name, t->worst_label, t->worst_candidate, t->worst_reference,
                     std::fabs(t->worst_candidate - t->worst_reference), t->bound_used,
                     t->tolerance.atol, t->tolerance.rtol, t->failing, t->elements);
}

void assert_agree(const Trace& candidate, const Trace& reference, const ToleranceSet& tolerances,
                  const BertConfig& config) {
  const TraceComparison c = compare_traces(candidate, reference, tolerances, config);
  if (!c.pass()) RC_FAIL(candidate.producer + " vs " + reference.producer + ": " + divergence(c));
}

// A random model with trained statistics, its input, the runtime's trace and what the derived gate
// judges it by, each computed the way `lenscheck verify` does.
struct JudgedRun {
  Checkpoint checkpoint;
  Trace runtime;
  Judge::References references;
  TraceComparison judged(const Tolerances& tolerances) const {
    return Judge(checkpoint, tolerances, Rule::derived).judge(runtime, references);
  }
};

JudgedRun judged_run() {
  JudgedRun r;
  r.checkpoint.config = *prop::small_config();
  const auto statistics = *prop::trained_statistics();
  const auto weight_seed = *rc::gen::arbitrary<uint64_t>();
  const Encoding input = *prop::token_sequence(r.checkpoint.config);
  r.checkpoint.weights = prop::random_weights(r.checkpoint.config, weight_seed, statistics);
  r.runtime = runtime::Encoder(r.checkpoint.config, r.checkpoint.weights).forward(input);
  Oracle::set_threads(1);
  r.references = Judge(r.checkpoint, committed_tolerances(), Rule::derived).references(input);
  return r;
}

bool all_zero(const Tensor& t) {
  for (double v : t.values)
    if (v != 0.0) return false;
  return true;
}

// A random permutation of `n` heads; shrinks towards the identity.
rc::Gen<std::vector<int>> head_permutation(int n) {
  return rc::gen::exec([n] {
    std::vector<int> p(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) p[size_t(i)] = i;
    for (int i = n - 1; i > 0; --i) std::swap(p[size_t(i)], p[size_t(i - *rc::gen::inRange(0, i + 1))]);
    return p;
  });
}

// The rows of a [H * rows_per_head, row_len] matrix, one block per head: p'[h] = p[from[h]].
void permute_blocks(std::vector<float>& values, size_t rows_per_head, size_t row_len,
                    const std::vector<int>& from) {
  const std::vector<float> old = values;
  const size_t block = rows_per_head * row_len;
  for (size_t h = 0; h < from.size(); ++h)
    std::copy_n(old.begin() + long(size_t(from[h]) * block), block, values.begin() + long(h * block));
}

// Columns of the [rows, H * Dh] matrix, one block of Dh per head: p'[:, h] = p[:, from[h]].
void permute_column_blocks(std::vector<float>& values, size_t rows, size_t dh,
                           const std::vector<int>& from) {
  const std::vector<float> old = values;
  const size_t cols = from.size() * dh;
  for (size_t r = 0; r < rows; ++r)
    for (size_t h = 0; h < from.size(); ++h)
      std::copy_n(old.begin() + long(r * cols + size_t(from[h]) * dh), dh,
                  values.begin() + long(r * cols + h * dh));
}

const char* const kPerHeadTensors[] = {"attention.query", "attention.key", "attention.value",
                                       "attention.scores", "attention.probs", "value_norm",
                                       "transformed_norm", "lens.value_norm",
                                       "lens.transformed_norm"};

// Undoes the head permutation on a trace of the permuted model: head h of it is head from[h] of the
// original, in every per-head tensor and in the context's feature blocks.
Trace unpermuted(const Trace& trace, const BertConfig& config,
                 const std::vector<std::vector<int>>& from) {
  Trace out = trace;
  const size_t H = static_cast<size_t>(config.num_attention_heads);
  for (size_t l = 0; l < from.size(); ++l) {
    const std::string p = fmt::format("layer.{}.", l);
    for (const char* name : kPerHeadTensors) {
      Tensor& t = *out.find(p + name);
      const Tensor& src = *trace.find(p + name);
      const size_t block = t.numel() / H;
      for (size_t h = 0; h < H; ++h)
        std::copy_n(src.values.begin() + long(h * block), block,
                    t.values.begin() + long(size_t(from[l][h]) * block));
    }
    Tensor& context = *out.find(p + "attention.context");
    const Tensor& src = *trace.find(p + "attention.context");
    const size_t T = static_cast<size_t>(context.shape[0]), dh = static_cast<size_t>(config.head_dim());
    for (size_t t = 0; t < T; ++t)
      for (size_t h = 0; h < H; ++h)
        std::copy_n(src.values.begin() + long(t * H * dh + h * dh), dh,
                    context.values.begin() + long(t * H * dh + size_t(from[l][h]) * dh));
  }
  return out;
}

bool bit_identical(const Tensor& a, const Tensor& b) { return a.shape == b.shape && prop::same_bits(a.values, b.values); }

}  // namespace

RC_GTEST_PROP(EncoderProperties, TheRuntimeRaisesNoFalseAlarmUnderTheDerivedGateOnModelsWithTrainedStatistics, ()) {
  const JudgedRun r = judged_run();
  const TraceComparison c = r.judged(committed_tolerances());
  if (!c.pass()) RC_FAIL("false alarm: " + divergence(c));
  // How hard the case was: the largest share of its bound any tensor used.
  double used = 0;
  for (const TensorComparison& t : c.tensors) used = std::max(used, t.bound_used);
  RC_TAG(used < 0.25 ? "bound used < 25 %" : used < 0.5 ? "bound used 25-50 %" : "bound used >= 50 %");
  // How saturated its attention was: scores past fp32's exp range, rows exactly one-hot in fp32.
  double top_score = 0;
  bool one_hot = false;
  for (int l = 0; l < r.checkpoint.config.num_hidden_layers; ++l) {
    for (double v : r.runtime.find(fmt::format("layer.{}.attention.scores", l))->values) top_score = std::max(top_score, v);
    for (double p : r.runtime.find(fmt::format("layer.{}.attention.probs", l))->values) one_hot = one_hot || p == 1.0;
  }
  RC_CLASSIFY(top_score > 88.72, "a score past fp32's exp range");
  RC_CLASSIFY(one_hot, "a row one-hot in fp32");
}

// The false alarm RapidCheck found (seed 2, case 9 654 of 20 000): a ReLU model of hidden 9 whose layer 4
// FFN input sums terms of about 1 into 0.0067. The runtime's order of summation errs by 2.1e-7 there, about
// 450 steps of the result; libtorch's fp32 recomputation happened to err far less, and a probe that moved
// each result one fp32 step under-stated the op's rounding: the tensor failed locally at 24.9x. A probe
// that moves each sum by a rounding at its terms' scale (oracle.h, LocalReferences) holds it.
TEST(EncoderProperties, AReLUModelWhoseFFNSumsCancelRaisesNoLocalFalseAlarm) {
  Checkpoint ck;
  ck.config.num_hidden_layers = 6;
  ck.config.num_attention_heads = 3;
  ck.config.hidden_size = 9;
  ck.config.intermediate_size = 2;
  ck.config.vocab_size = 10;
  ck.config.max_position_embeddings = 10;
  ck.config.type_vocab_size = 2;
  ck.config.hidden_act = "relu";
  ck.config.layer_norm_eps = 1e-5;
  ck.weights = prop::random_weights(ck.config, 92976684629,
                                    {.spread = 1.7, .query_key_gain = 3, .outlier_dims = 1, .outlier_gain = 5});
  const Encoding input{.ids = {2, 7, 7, 3}, .tokens = {"[CLS]", "a7", "a7", "[SEP]"}, .word_ids = {-1, 0, 1, -1},
                       .words = {"a7", "a7"}};
  Oracle::set_threads(1);
  const Trace runtime = runtime::Encoder(ck.config, ck.weights).forward(input);
  // The sum at [CLS], feature 0: its terms x_i W_0i and b_0, far larger than it.
  const LayerWeights& ffn = ck.weights.layers.at(4);
  const Tensor& x = *runtime.find("layer.4.attention.output");
  double sum = ffn.intermediate_b.values[0], terms = std::fabs(sum);
  for (size_t i = 0; i < size_t(ck.config.hidden_size); ++i) {
    sum += x.values[i] * double(ffn.intermediate_w.values[i]);
    terms += std::fabs(x.values[i] * double(ffn.intermediate_w.values[i]));
  }
  EXPECT_GT(terms, 100 * std::fabs(sum));
  const Judge judge(ck, committed_tolerances(), Rule::derived);
  const TraceComparison c = judge.judge(runtime, judge.references(input));
  EXPECT_TRUE(c.pass()) << divergence(c);
  const std::string name = "layer.4.intermediate";
  const auto judged = std::find_if(c.tensors.begin(), c.tensors.end(), [&](const auto& t) { return t.name == name; });
  ASSERT_NE(judged, c.tensors.end());
  ASSERT_TRUE(judged->local.has_value());
  // The mechanism: against the old probe, each exact result moved one fp32 step, the same error fails (24.9x,
  // as RapidCheck found it). Not against libtorch's fp32 recomputation alone: how far that errs is its order of
  // summation on the CPU it runs on (on an AVX-512 Xeon it errs as much as the runtime does: 0.60x).
  const Oracle::LocalReferences local = Oracle::recomputing_in(ck.config, ck.weights, Arithmetic::fp32)
                                            .recompute_locally(runtime, kRoundingProbes);
  Trace one_step = local.exact;
  for (double& v : one_step.find(name)->values) {
    const float f = float(v);
    v = double(std::nextafter(f, f >= 0 ? HUGE_VALF : -HUGE_VALF));
  }
  TraceComparison one_step_probe = c;
  judge_locally(one_step_probe, runtime, local.exact, {&one_step}, committed_tolerances(), scheme_of(Arithmetic::fp32));
  const auto alone = std::find_if(one_step_probe.tensors.begin(), one_step_probe.tensors.end(),
                                  [&](const auto& t) { return t.name == name; });
  EXPECT_GT(alone->local->ratio, judged->tolerance.k) << alone->local->ratio;
  EXPECT_LE(judged->local->ratio, judged->tolerance.k);
}

RC_GTEST_PROP(EncoderProperties, ScalingOneTensorOfEveryTraceByAPowerOfTwoLeavesItsGlobalRatioUnchanged, ()) {
  JudgedRun r = judged_run();
  // Faults of every size, so that failing verdicts are held to it as well as passing ones.
  const double fault = *rc::gen::element(0.0, 1e-6, 1e-4, 1e-2);
  const Trace& truth = *r.references.truth;
  const size_t which = *rc::gen::inRange<size_t>(0, truth.tensors.size());
  const std::string name = truth.tensors[which].first;
  for (double& v : r.runtime.find(name)->values) v *= 1 + fault;
  const int power = *rc::gen::inRange(-40, 41);
  const Tolerances& tolerances = committed_tolerances();
  const TraceComparison before = r.judged(tolerances);
  std::vector<Trace*> every = {&r.runtime, &r.references.benchmark, &*r.references.truth};
  for (Trace& t : r.references.perturbed) every.push_back(&t);
  for (Trace* t : every)
    for (double& v : t->find(name)->values) v = std::ldexp(v, power);  // exact
  const TraceComparison after = r.judged(tolerances);
  auto of = [&](const TraceComparison& c) -> const TensorComparison& {
    for (const TensorComparison& t : c.tensors)
      if (t.name == name) return t;
    throw std::logic_error(name + " was not compared");
  };
  const TensorComparison &a = of(before), &b = of(after);
  RC_ASSERT(a.derived.has_value());
  RC_ASSERT(b.derived.has_value());
  // The global verdict's ratio (the local one recomputes the ops that read the scaled tensor).
  if (!prop::same_bits(a.derived->ratio, b.derived->ratio))
    RC_FAIL(fmt::format("{} scaled by 2^{}: ratio {:.17g} became {:.17g}", name, power, a.derived->ratio,
                        b.derived->ratio));
  RC_TAG(a.derived->ratio <= a.tolerance.k ? "passes" : "fails");
}

RC_GTEST_PROP(EncoderProperties, EveryAttentionRowIsNonNegativeAndSumsToOneWithinNTimesEpsilon, ()) {
  const BertConfig config = *prop::small_config();
  const auto weight_seed = *rc::gen::arbitrary<uint64_t>();
  const Encoding input = *prop::token_sequence(config);
  const BertWeights weights = prop::random_weights(config, weight_seed, *prop::trained_statistics());
  const Trace runtime = runtime::Encoder(config, weights).forward(input);
  const Trace oracle = oracle_trace(config, weights, Precision::fp32, input);
  const size_t T = input.ids.size();
  double peak_sum = 0;
  size_t rows = 0;
  for (const Trace* trace : {&runtime, &oracle})
    for (int l = 0; l < config.num_hidden_layers; ++l) {
      const std::string name = fmt::format("layer.{}.attention.probs", l);
      const Tensor& probs = *trace->find(name);
      for (size_t row = 0; row < probs.numel() / T; ++row) {
        const double* p = probs.values.data() + row * T;
        double sum = 0, peak = 0;
        for (size_t k = 0; k < T; ++k) {
          if (!(p[k] >= 0)) RC_FAIL(fmt::format("{} {} row {} key {} is {}", trace->producer, name, row, k, p[k]));
          sum += p[k];
          peak = std::max(peak, p[k]);
        }
        if (!(std::fabs(sum - 1) <= static_cast<double>(T) * FLT_EPSILON))
          RC_FAIL(fmt::format("{} {} row {} sums to 1 {:+.3g}, more than {} x FLT_EPSILON off",
                              trace->producer, name, row, sum - 1, T));
        peak_sum += peak * static_cast<double>(T);
        ++rows;
      }
    }
  // How far the generator's attention is from uniform (1) and one-hot (T): the mean row peak in
  // units of 1/T, printed as a distribution when the property passes.
  const double peak = peak_sum / static_cast<double>(rows);
  RC_TAG(T <= 3 ? "T <= 3" : peak < 1.25 ? "peak < 1.25/T (near uniform)" : peak < 2 ? "peak 1.25-2/T"
                : peak < 4 ? "peak 2-4/T" : peak < 0.9 * static_cast<double>(T) ? "peak >= 4/T"
                : "peak >= 0.9 (near one-hot)");
}

RC_GTEST_PROP(EncoderProperties, AModelWithZeroValueWeightsGivesZeroValueNormLensesAndAnUndefinedShareNotNaN, ()) {
  const BertConfig config = *prop::small_config();
  const auto weight_seed = *rc::gen::arbitrary<uint64_t>();
  const Encoding input = *prop::token_sequence(config);
  BertWeights weights = prop::random_weights(config, weight_seed, *prop::trained_statistics());
  for (LayerWeights& L : weights.layers) {
    std::fill(L.value_w.values.begin(), L.value_w.values.end(), 0.0f);
    std::fill(L.value_b.values.begin(), L.value_b.values.end(), 0.0f);
  }
  const Trace runtime = runtime::Encoder(config, weights).forward(input);
  const Trace oracle = oracle_trace(config, weights, Precision::fp32, input);
  for (const Trace* trace : {&runtime, &oracle})
    for (int l = 0; l < config.num_hidden_layers; ++l)
      for (const char* name : {"value_norm", "transformed_norm", "lens.value_norm",
                               "lens.transformed_norm", "lens.summed_transformed_norm"}) {
        const std::string full = fmt::format("layer.{}.{}", l, name);
        if (!all_zero(*trace->find(full))) RC_FAIL(trace->producer + " " + full + " is not all zero");
      }

  const WordLayout layout = WordLayout::of(runtime);
  const int words = static_cast<int>(layout.words.size());
  const int layers = config.num_hidden_layers, heads = config.num_attention_heads;
  for (int w = 0; w < words; ++w) {
    for (Lens lens : {Lens::value_norm, Lens::transformed_norm}) {
      for (int l = 0; l < layers; ++l)
        for (int h = 0; h < heads; ++h) {
          const WordRow row = word_row(layout, *runtime.find(lens_tensor(lens, l)), {l, h}, w);
          RC_ASSERT(row.total() == 0.0);
          RC_ASSERT(!row.sink_share().has_value());
          RC_ASSERT(!row.displayed().has_value());
          RC_ASSERT(row.top_share() == 0.0);
        }
      for (const HeadRule& rule : {HeadRule::parse("max_content_peak"), HeadRule::parse("min_sink")}) {
        const WordRow shown = instrument_row(runtime, layout, lens, w, rule, layers, heads);
        RC_ASSERT(!shown.sink_share().has_value());
        RC_ASSERT(shown.top_share() == 0.0);
      }
    }
    // The attention itself is untouched by V: its row is a distribution with a defined share.
    const WordRow attention = word_row(layout, *runtime.find(lens_tensor(Lens::attention, 0)), {0, 0}, w);
    RC_ASSERT(attention.sink_share().has_value());
    RC_ASSERT(*attention.sink_share() >= 0.0);
    RC_ASSERT(*attention.sink_share() <= 1.0);
  }
}

RC_GTEST_PROP(EncoderProperties, PermutingTheOrderOfHeadsInTheWeightsPermutesThePerHeadTensorsAndNothingElse, ()) {
  // Up to 3 layers: the rounding bound below was measured there, and heads mix alike at any depth.
  const BertConfig config = *prop::small_config(3);
  const auto weight_seed = *rc::gen::arbitrary<uint64_t>();
  const Encoding input = *prop::token_sequence(config);
  const int H = config.num_attention_heads;
  std::vector<std::vector<int>> from;  // per layer: head h of the permuted model is head from[h]
  for (int l = 0; l < config.num_hidden_layers; ++l) from.push_back(*head_permutation(H));

  const BertWeights weights = prop::random_weights(config, weight_seed);
  BertWeights permuted = weights;
  const size_t D = static_cast<size_t>(config.hidden_size), dh = static_cast<size_t>(config.head_dim());
  for (size_t l = 0; l < from.size(); ++l) {
    LayerWeights& L = permuted.layers[l];
    for (Param* w : {&L.query_w, &L.key_w, &L.value_w}) permute_blocks(w->values, dh, D, from[l]);
    for (Param* b : {&L.query_b, &L.key_b, &L.value_b}) permute_blocks(b->values, dh, 1, from[l]);
    permute_column_blocks(L.attention_out_w.values, D, dh, from[l]);  // [out, in]: the heads are in
  }
  const Trace original = runtime::Encoder(config, weights).forward(input);
  const Trace restored = unpermuted(runtime::Encoder(config, permuted).forward(input), config, from);

  // Up to the first sum over heads every value is computed the same way, so bit for bit.
  std::vector<std::string> exact = {"embeddings.output", "layer.0.attention.context"};
  for (const char* name : kPerHeadTensors) exact.push_back(std::string("layer.0.") + name);
  for (const std::string& name : exact)
    if (!bit_identical(*restored.find(name), *original.find(name)))
      RC_FAIL(name + " of the permuted model, its heads put back, differs from the original's");
  // The output projection then sums the heads in another order, and everything after it is equal up
  // to that reordering's rounding: at most 1.6e-6 (1 + |x|) over 5 000 cases, so 1e-5 bounds it while
  // any mixing up of heads moves values by 0.01 or more. (The gate is no bound here: it judges a
  // runtime against the fp64 truth, not two runtimes against each other.)
  const ToleranceSet rounding{{{.pattern = "*", .atol = 1e-5, .rtol = 1e-5}}};
  assert_agree(restored, original, rounding, config);
}


// Threads share each kernel's outputs, and each instruction set fuses the same multiply-adds in the
// same order, so neither may move a bit of the full trace.
RC_GTEST_PROP(EncoderProperties, TheTraceIsTheSameBitsOnEveryThreadCountAndInstructionSet, ()) {
  const BertConfig config = *prop::small_config();
  const auto weight_seed = *rc::gen::arbitrary<uint64_t>();
  const Encoding input = *prop::token_sequence(config);
  const BertWeights weights = prop::random_weights(config, weight_seed, *prop::trained_statistics());
  const auto threads = static_cast<unsigned>(*rc::gen::inRange(2, 6));
  const Trace one = runtime::Encoder(config, weights).forward(input);
  const runtime::InstructionSet chosen = runtime::instruction_set();
  for (runtime::InstructionSet set :
       {runtime::InstructionSet::baseline, runtime::InstructionSet::avx2, runtime::InstructionSet::avx512}) {
    if (!runtime::instruction_set_supported(set)) continue;
    runtime::use_instruction_set(set);
    const Trace many = runtime::Encoder(config, weights, threads).forward(input);
    runtime::use_instruction_set(chosen);
    RC_ASSERT(many.tensors.size() == one.tensors.size());
    for (size_t i = 0; i < one.tensors.size(); ++i)
      if (many.tensors[i].first != one.tensors[i].first || !bit_identical(many.tensors[i].second, one.tensors[i].second))
        RC_FAIL(fmt::format("{} on {} threads and {} differs from one thread's on {}", one.tensors[i].first,
                            threads, runtime::instruction_set_name(set), runtime::instruction_set_name(chosen)));
  }
}

}  // namespace lenscheck
