// The comparison rule and the gate: what passes, what fails, and how a failure is named.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>

#include "gate/compare.h"
#include "gate/tolerances.h"
#include "model/arithmetic.h"
#include "model/error.h"
#include "tests/test_support.h"

using namespace lenscheck;

namespace {

// A one-layer, one-head model: small enough to build every trace tensor by hand.
BertConfig tiny_config() {
  BertConfig c;
  c.hidden_size = 2;
  c.num_hidden_layers = 1;
  c.num_attention_heads = 1;
  c.intermediate_size = 3;
  c.hidden_act = "gelu";
  c.layer_norm_eps = 1e-12;
  c.max_position_embeddings = 8;
  c.type_vocab_size = 2;
  c.vocab_size = 10;
  return c;
}

Trace full_trace(const BertConfig& c, double fill) {
  Trace t;
  t.input_ids = {2, 5, 3};
  t.tokens = {"[CLS]", "scissors", "[SEP]"};
  for (const TensorSpec& s : trace_schema(c, 3)) {
    Tensor x(s.shape);
    for (size_t i = 0; i < x.numel(); ++i) x.values[i] = fill + 0.01 * static_cast<double>(i);
    t.add(s.name, x);
  }
  return t;
}

ToleranceSet rules(double atol, double rtol) { return {{{.pattern = "*", .atol = atol, .rtol = rtol, .line = 1}}}; }

}  // namespace

TEST(Closeness, FollowsTheAtolPlusRtolTimesReferenceRule) {
  const BertConfig c = tiny_config();
  const Trace ref = full_trace(c, 1.0);
  Trace cand = ref;
  // |a - b| = 0.5e-3 against atol 1e-4 + rtol 1e-3 * |b| with b = 1.0: bound 1.1e-3, close.
  cand.find("layer.0.output")->values[0] += 0.5e-3;
  EXPECT_TRUE(compare_traces(cand, ref, rules(1e-4, 1e-3), c).pass());
  // 1.2e-3 is past the bound.
  cand.find("layer.0.output")->values[0] = ref.find("layer.0.output")->values[0] + 1.2e-3;
  const TraceComparison r = compare_traces(cand, ref, rules(1e-4, 1e-3), c);
  EXPECT_FALSE(r.pass());
  ASSERT_NE(r.first_divergence(), nullptr);
  EXPECT_EQ(r.first_divergence()->name, "layer.0.output");
  EXPECT_EQ(r.first_divergence()->failing, 1u);
  EXPECT_NEAR(r.first_divergence()->max_abs, 1.2e-3, 1e-12);
}

TEST(Closeness, NanAndInfAreNeverClose) {
  const BertConfig c = tiny_config();
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    const Trace ref = full_trace(c, 1.0);
    Trace cand = ref;
    cand.find("layer.0.attention.probs")->values[4] = bad;
    const TraceComparison r = compare_traces(cand, ref, rules(1e9, 1e9), c);
    EXPECT_FALSE(r.pass());
    EXPECT_EQ(r.first_divergence()->name, "layer.0.attention.probs");
    EXPECT_EQ(r.first_divergence()->non_finite, 1u);
    // Identical non-finite values on both sides are not close either.
    Trace both = cand;
    EXPECT_FALSE(compare_traces(both, cand, rules(1e9, 1e9), c).pass());
  }
}

TEST(Gate, FirstFailingTensorInForwardOrderIsThePointOfDivergence) {
  const BertConfig c = tiny_config();
  const Trace ref = full_trace(c, 0.5);
  Trace cand = ref;
  cand.find("layer.0.intermediate")->values[0] += 1;
  cand.find("layer.0.attention.scores")->values[0] += 1;
  const TraceComparison r = compare_traces(cand, ref, rules(1e-6, 0), c);
  EXPECT_EQ(r.first_divergence()->name, "layer.0.attention.scores");
}

TEST(Gate, WorstElementIsNamedWithTokens) {
  const BertConfig c = tiny_config();
  const Trace ref = full_trace(c, 0.5);
  Trace cand = ref;
  cand.find("layer.0.attention.probs")->values[1 * 3 + 2] += 0.1;  // query 1 → key 2
  const TraceComparison r = compare_traces(cand, ref, rules(1e-6, 0), c);
  EXPECT_EQ(r.first_divergence()->worst_label, "[h0, scissors@1 → [SEP]@2]");
  EXPECT_EQ(element_label({Axis::token, Axis::feature}, {3, 2}, 5, ref.tokens), "[[SEP]@2, d1]");
  EXPECT_EQ(element_label({Axis::head, Axis::token}, {2, 3}, 3, ref.tokens), "[h1, [CLS]@0]");
}

TEST(Gate, MissingTensorOnEitherSideFails) {
  const BertConfig c = tiny_config();
  const Trace ref = full_trace(c, 0.5);
  Trace cand = ref;
  std::erase_if(cand.tensors, [](const auto& t) { return t.first == "layer.0.value_norm"; });
  TraceComparison r = compare_traces(cand, ref, rules(1, 1), c);
  EXPECT_FALSE(r.pass());
  EXPECT_EQ(r.first_divergence()->name, "layer.0.value_norm");
  EXPECT_EQ(r.first_divergence()->problem, "missing from the candidate trace");
  r = compare_traces(ref, cand, rules(1, 1), c);
  EXPECT_EQ(r.first_divergence()->problem, "missing from the reference trace");
}

TEST(Gate, ShapeMismatchAndUnknownTensorsFail) {
  const BertConfig c = tiny_config();
  const Trace ref = full_trace(c, 0.5);
  Trace cand = ref;
  cand.find("embeddings.output")->shape = {2, 3};
  EXPECT_NE(compare_traces(cand, ref, rules(1, 1), c).first_divergence()->problem.find("shape [2, 3]"),
            std::string::npos);
  Trace extra = ref;
  extra.add("layer.0.surprise", Tensor({1}));
  const TraceComparison r = compare_traces(extra, ref, rules(1, 1), c);
  EXPECT_FALSE(r.pass());
  EXPECT_EQ(r.first_divergence()->name, "layer.0.surprise");
}

TEST(Gate, ComparingNothingFails) {
  const TraceComparison empty;
  EXPECT_FALSE(empty.pass());
}

TEST(Gate, DifferentInputsAreNotCompared) {
  const BertConfig c = tiny_config();
  const Trace ref = full_trace(c, 0.5);
  Trace cand = ref;
  cand.input_ids[1] = 6;
  const TraceComparison r = compare_traces(cand, ref, rules(1, 1), c);
  EXPECT_FALSE(r.pass());
  EXPECT_NE(r.problem.find("different inputs"), std::string::npos);
}

TEST(Gate, ATensorNoRuleCoversFails) {
  const BertConfig c = tiny_config();
  const Trace ref = full_trace(c, 0.5);
  const ToleranceSet only_probs{{{"layer.*.attention.probs", 1, 1, 1}}};
  const TraceComparison r = compare_traces(ref, ref, only_probs, c);
  EXPECT_FALSE(r.pass());
  EXPECT_EQ(r.first_divergence()->name, "embeddings.output");
  EXPECT_EQ(r.first_divergence()->problem, "no tolerance rule matches this tensor");
}

Tolerances derived_rule(double k, double floor = 1) {
  Tolerances t;
  t.floor = floor;
  t.derived = {{{.pattern = "*", .k = k, .line = 1}}};
  return t;
}

// Every tensor of `trace` moved by `relative` of its own element plus the tensor's rms, alternately up
// and down: an error whose weighed rms (ErrorRatio) is `relative` exactly in exact arithmetic.
Trace moved(const Trace& trace, double relative) {
  Trace out = trace;
  for (auto& [name, t] : out.tensors) {
    double sum = 0;
    for (double v : t.values) sum += v * v;
    const double rms = std::sqrt(sum / double(t.numel()));
    for (size_t i = 0; i < t.numel(); ++i) t.values[i] += (i % 2 ? -1 : 1) * relative * (std::fabs(t.values[i]) + rms);
  }
  return out;
}

TEST(DerivedRule, TheCandidateMayBeKTimesAsFarFromTheTruthAsLibtorchIs) {
  const BertConfig c = tiny_config();
  const Trace truth = full_trace(c, 1.0), benchmark = moved(truth, 1e-5), candidate = moved(truth, 3e-5);
  const TraceComparison at4 = compare_derived(candidate, {&benchmark}, truth, derived_rule(4), c);
  EXPECT_TRUE(at4.pass());
  for (const TensorComparison& t : at4.tensors) {
    ASSERT_TRUE(t.derived) << t.name;
    EXPECT_NEAR(t.derived->ratio, 3, 1e-6) << t.name;
    EXPECT_NEAR(t.derived->benchmark_error, 1e-5, 1e-10) << t.name;
    EXPECT_NEAR(t.bound_used, 0.75, 1e-6) << t.name;
  }
  const TraceComparison at2 = compare_derived(candidate, {&benchmark}, truth, derived_rule(2), c);
  EXPECT_FALSE(at2.pass());
  EXPECT_EQ(at2.first_divergence()->name, "embeddings.output");
}

// The local verdict's floor: one element of the tensor one step of its stored format off the op's exact
// recomputation. Where the op's own spread is nil, k = 16 lets at least 256 elements be one step off.
TEST(LocalRule, AtFp16AFewLastBitsFlippedPassAndASystematicStepFails) {
  const BertConfig c = tiny_config();
  Trace exact = full_trace(c, 1.0);
  for (auto& [name, t] : exact.tensors)
    for (double& v : t.values) v = round_to(kBinary16, v);
  // Every element one fp16 step up: the fault a 1e-3 weight error makes at fp16.
  Trace stepped = exact;
  for (auto& [name, t] : stepped.tensors)
    for (double& v : t.values) v = step_in(kBinary16, v, true);
  // One element of each tensor one step up: a correct implementation that sums in another order.
  Trace flipped = exact;
  for (auto& [name, t] : flipped.tensors) t.values[0] = step_in(kBinary16, t.values[0], true);

  const Tolerances rule = derived_rule(16);
  TraceComparison one = compare_derived(flipped, {&flipped}, flipped, rule, c);
  judge_locally(one, flipped, exact, {&exact}, rule, scheme_of(Arithmetic::fp16));
  EXPECT_TRUE(one.pass());
  TraceComparison all = compare_derived(stepped, {&stepped}, stepped, rule, c);
  judge_locally(all, stepped, exact, {&exact}, rule, scheme_of(Arithmetic::fp16));
  for (const TensorComparison& t : all.tensors) {
    ASSERT_TRUE(t.local) << t.name;
    EXPECT_DOUBLE_EQ(t.local->floor, relative_spacing(kBinary16) / std::sqrt(double(t.elements))) << t.name;
    // Each element one step off weighs at most one spacing: n elements at most sqrt(n) floors, past k
    // only where n > 256; every tensor here is smaller.
    EXPECT_GT(t.local->ratio, 0) << t.name;
    EXPECT_LE(t.local->ratio, std::sqrt(double(t.elements)) * (1 + 1e-12)) << t.name;
  }
  EXPECT_EQ(all.first_local_failure(), nullptr);
  // The same systematic step where the op's own spread is far smaller than a step: fails at the first op.
  Trace spread = exact;
  for (auto& [name, t] : spread.tensors) t.values[0] += 1e-9;
  TraceComparison tight = compare_derived(stepped, {&stepped}, stepped, derived_rule(16, 1e-6), c);
  judge_locally(tight, stepped, exact, {&spread}, derived_rule(16, 1e-6), scheme_of(Arithmetic::fp16));
  ASSERT_NE(tight.first_local_failure(), nullptr);
  EXPECT_EQ(tight.first_local_failure()->name, "embeddings.output");
}

TEST(DerivedRule, WhereLibtorchIsExactTheFloorStandsInForItsError) {
  const BertConfig c = tiny_config();
  const Trace truth = full_trace(c, 1.0);
  // libtorch exact: the candidate's half-epsilon error is within k = 4 of a one-epsilon floor ...
  EXPECT_TRUE(compare_derived(moved(truth, 0.5 * FLT_EPSILON), {&truth}, truth, derived_rule(4), c).pass());
  // ... and ten epsilons are not; nor is any error at all without a floor to stand in.
  EXPECT_FALSE(compare_derived(moved(truth, 10 * FLT_EPSILON), {&truth}, truth, derived_rule(4), c).pass());
  const TraceComparison r = compare_derived(moved(truth, 10 * FLT_EPSILON), {&truth}, truth, derived_rule(4, 8), c);
  EXPECT_TRUE(r.pass());
  EXPECT_DOUBLE_EQ(r.tensors.front().derived->floor, 8 * FLT_EPSILON);
}

TEST(DerivedRule, TheLargestOfTheBenchmarksErrorsIsTheYardstick) {
  const BertConfig c = tiny_config();
  const Trace truth = full_trace(c, 1.0), lucky = moved(truth, 1e-6), typical = moved(truth, 1e-5),
              candidate = moved(truth, 3e-5);
  EXPECT_FALSE(compare_derived(candidate, {&lucky}, truth, derived_rule(4), c).pass());
  const TraceComparison r = compare_derived(candidate, {&lucky, &typical}, truth, derived_rule(4), c);
  EXPECT_TRUE(r.pass());
  EXPECT_NEAR(r.tensors.front().derived->ratio, 3, 1e-6);
}

TEST(DerivedRule, NanInTheCandidateFailsAndNanInTheTruthIsNamed) {
  const BertConfig c = tiny_config();
  const Trace truth = full_trace(c, 1.0), benchmark = moved(truth, 1e-5);
  Trace candidate = truth;
  candidate.find("layer.0.attention.probs")->values[2] = std::numeric_limits<double>::quiet_NaN();
  const TraceComparison r = compare_derived(candidate, {&benchmark}, truth, derived_rule(1e9), c);
  EXPECT_FALSE(r.pass());
  EXPECT_EQ(r.first_divergence()->name, "layer.0.attention.probs");
  EXPECT_EQ(r.first_divergence()->non_finite, 1u);
  Trace bad_truth = truth;
  bad_truth.find("layer.0.output")->values[0] = std::numeric_limits<double>::infinity();
  const TraceComparison t = compare_derived(truth, {&benchmark}, bad_truth, derived_rule(1e9), c);
  EXPECT_FALSE(t.pass());
  EXPECT_EQ(t.first_divergence()->problem, "the fp64 oracle has NaN or Inf in this tensor: nothing to judge it by");
}

TEST(DerivedRule, AMissingTensorInAnyOfTheThreeTracesFails) {
  const BertConfig c = tiny_config();
  const Trace truth = full_trace(c, 1.0);
  for (int side = 0; side < 3; ++side) {
    Trace traces[3] = {truth, truth, truth};
    traces[side].tensors.pop_back();
    const TraceComparison r = compare_derived(traces[0], {&traces[1]}, traces[2], derived_rule(4), c);
    EXPECT_FALSE(r.pass()) << side;
    EXPECT_NE(r.first_divergence()->problem.find("missing from the"), std::string::npos) << side;
  }
}

TEST(DerivedRule, UnlikeAnAbsoluteToleranceItsVerdictDoesNotDependOnScale) {
  const BertConfig c = tiny_config();
  const Trace truth = full_trace(c, 1.0), benchmark = moved(truth, 1e-6), candidate = moved(truth, 3e-6);
  auto scaled = [](Trace t, int power) {
    for (auto& [name, tensor] : t.tensors)
      for (double& v : tensor.values) v = std::ldexp(v, power);
    return t;
  };
  for (int power : {-30, 0, 30}) {
    const Trace scaled_benchmark = scaled(benchmark, power);
    const TraceComparison r =
        compare_derived(scaled(candidate, power), {&scaled_benchmark}, scaled(truth, power), derived_rule(4), c);
    EXPECT_TRUE(r.pass()) << power;
    EXPECT_NEAR(r.tensors.front().derived->ratio, 3, 1e-6) << power;
  }
  // The absolute rule that passes at unit scale fails the same numbers scaled up.
  EXPECT_TRUE(compare_traces(candidate, truth, rules(1e-4, 0), c).pass());
  EXPECT_FALSE(compare_traces(scaled(candidate, 30), scaled(truth, 30), rules(1e-4, 0), c).pass());
}

TEST(Ulp, CountsFloat32StepsAcrossZero) {
  EXPECT_EQ(ulp_distance(1.0, 1.0), 0u);
  EXPECT_EQ(ulp_distance(1.0, std::nextafter(1.0f, 2.0f)), 1u);
  EXPECT_EQ(ulp_distance(0.0, -0.0), 0u);
  EXPECT_EQ(ulp_distance(std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min()), 2u);
  EXPECT_EQ(ulp_distance(std::nan(""), 1.0), std::numeric_limits<uint64_t>::max());
}

TEST(Patterns, StarMatchesAnyRun) {
  EXPECT_TRUE(pattern_matches("layer.*.attention.probs", "layer.3.attention.probs"));
  EXPECT_TRUE(pattern_matches("layer.*.probs", "layer.12.attention.probs"));
  EXPECT_TRUE(pattern_matches("*", "embeddings.output"));
  EXPECT_FALSE(pattern_matches("layer.*.attention.probs", "layer.3.attention.scores"));
  EXPECT_FALSE(pattern_matches("layer.*.output", "layer.3.attention.output.x"));
  EXPECT_TRUE(pattern_matches("embeddings.output", "embeddings.output"));
  EXPECT_FALSE(pattern_matches("embeddings.output", "embeddings.outputs"));
}

TEST(TolerancesFile, TheCommittedFileLoadsAndCoversEveryTensor) {
  const Tolerances t = load_tolerances(test::source_dir() / "fixtures/tolerances.yaml");
  BertConfig c = tiny_config();
  c.num_hidden_layers = 4;
  for (const TensorSpec& s : trace_schema(c, 5)) {
    ASSERT_NE(t.derived.match(s.name), nullptr) << s.name;
    EXPECT_GT(t.derived.match(s.name)->k, 1) << s.name;  // libtorch's own error must pass
    EXPECT_NE(t.absolute.match(s.name), nullptr) << s.name;
  }
  EXPECT_GT(t.floor, 0);
}

const std::string kDerived = "derived:\n  floor: 1\n  rules:\n    - {pattern: \"*\", k: 4}\n";
const std::string kAbsolute = "absolute:\n  - {pattern: \"*\", atol: 1, rtol: 1}\n";

TEST(TolerancesFile, ErrorsNameTheFileAndLine) {
  const auto dir = test::temp_dir("tol");
  auto error_of = [&](const std::string& yaml) -> std::string {
    test::write_file(dir / "t.yaml", yaml);
    try {
      load_tolerances(dir / "t.yaml");
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), dir / "t.yaml");
      return e.problem();
    }
    return "no error";
  };
  EXPECT_EQ(error_of(kDerived + "absolute:\n  - {pattern: \"*\", atol: 1, rtol: 1, rtoll: 2}\n"),
            "line 6: unknown key \"rtoll\" (expected: pattern, atol, rtol)");
  EXPECT_EQ(error_of(kDerived + "absolute:\n  - {pattern: \"*\", atol: tiny, rtol: 1}\n"),
            "line 6: atol must be a finite number, got \"tiny\"");
  EXPECT_EQ(error_of(kDerived + "absolute:\n  - {pattern: \"*\", atol: -1, rtol: 1}\n"),
            "line 6: atol and rtol must be non-negative");
  // The derived rule's k: missing, zero, negative or not a number.
  auto with_rule = [&](const std::string& rule) {
    return error_of("derived:\n  floor: 1\n  rules:\n    - " + rule + "\n" + kAbsolute);
  };
  EXPECT_EQ(with_rule("{pattern: \"*\"}"), "line 4: missing key \"k\"");
  EXPECT_EQ(with_rule("{pattern: \"*\", k: 0}"), "line 4: k must be positive");
  EXPECT_EQ(with_rule("{pattern: \"*\", k: -4}"), "line 4: k must be positive");
  EXPECT_EQ(with_rule("{pattern: \"*\", k: .nan}"), "line 4: k must be a finite number, got \".nan\"");
  EXPECT_EQ(with_rule("{pattern: \"*\", k: 4, atol: 1}"), "line 4: unknown key \"atol\" (expected: pattern, k)");
  EXPECT_EQ(error_of("derived:\n  floor: 0\n  rules:\n    - {pattern: \"*\", k: 4}\n" + kAbsolute),
            "line 2: floor must be positive");
  EXPECT_EQ(error_of("derived:\n  rules:\n    - {pattern: \"*\", k: 4}\n" + kAbsolute), "line 2: missing key \"floor\"");
  EXPECT_EQ(error_of(kAbsolute), "line 1: missing key \"derived\"");
  EXPECT_EQ(error_of("derived: 3\n" + kAbsolute), "line 1: derived must be a mapping");
}

TEST(TolerancesFile, ARuleNamingNoTensorFailsAndAnIdleRuleWarns) {
  const auto dir = test::temp_dir("coverage");
  const std::vector<std::string> names = {"embeddings.output", "layer.0.attention.probs", "layer.0.output"};
  auto coverage = [&](const std::string& rules) {
    test::write_file(dir / "t.yaml", "derived:\n  floor: 1\n  rules:\n" + rules + kAbsolute);
    return check_coverage(load_tolerances(dir / "t.yaml"), names);
  };
  EXPECT_TRUE(coverage("    - {pattern: \"*\", k: 4}\n").empty());
  try {
    coverage("    - {pattern: \"layer.0.attention.prob\", k: 4}\n    - {pattern: \"*\", k: 4}\n");
    FAIL() << "a typo in a tensor name must not pass";
  } catch (const InputError& e) {
    EXPECT_EQ(e.problem(), "line 4: derived rule \"layer.0.attention.prob\" names no tensor of the trace");
  }
  const auto warnings = coverage("    - {pattern: \"*\", k: 4}\n    - {pattern: \"layer.*.probs\", k: 4}\n"
                                 "    - {pattern: \"layer.*.nothing\", k: 4}\n");
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("line 5: derived rule \"layer.*.probs\" applies to no tensor (earlier rules take every "
                             "tensor it matches)"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("line 6: derived rule \"layer.*.nothing\" applies to no tensor (it matches none)"),
            std::string::npos) << warnings[1];
}
