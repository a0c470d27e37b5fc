// The comparison rule and the gate: what passes, what fails, and how a failure is named.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "harness/compare.h"
#include "harness/tolerances.h"
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

ToleranceSet rules(double atol, double rtol) { return {{{"*", atol, rtol, 1}}}; }

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
    EXPECT_NE(t.agreement.match(s.name), nullptr) << s.name;
    EXPECT_NE(t.truth.match(s.name), nullptr) << s.name;
  }
  EXPECT_DOUBLE_EQ(t.agreement.match("layer.2.attention.probs")->atol, 4e-6);
}

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
  const std::string truth = "truth:\n  - {pattern: \"*\", atol: 1, rtol: 1}\n";
  EXPECT_EQ(error_of("agreement:\n  - {pattern: \"*\", atol: 1, rtol: 1, rtoll: 2}\n" + truth),
            "line 2: unknown key \"rtoll\" (expected: pattern, atol, rtol)");
  EXPECT_EQ(error_of("agreement:\n  - {pattern: \"*\", atol: tiny, rtol: 1}\n" + truth),
            "line 2: atol must be a finite number, got \"tiny\"");
  EXPECT_EQ(error_of("agreement:\n  - {pattern: \"*\", atol: .nan, rtol: 1}\n" + truth),
            "line 2: atol must be a finite number, got \".nan\"");
  EXPECT_EQ(error_of("agreement:\n  - {pattern: \"*\", atol: -1, rtol: 1}\n" + truth),
            "line 2: atol and rtol must be non-negative");
  EXPECT_EQ(error_of(truth), "line 1: missing key \"agreement\"");
  EXPECT_NE(error_of("agreement: [\n" + truth).find("malformed YAML"), std::string::npos);
  EXPECT_EQ(error_of("agreement: 3\n" + truth), "line 1: agreement must be a list");
}

TEST(TolerancesFile, ARuleNamingNoTensorFailsAndAnIdleRuleWarns) {
  const auto dir = test::temp_dir("coverage");
  const std::vector<std::string> names = {"embeddings.output", "layer.0.attention.probs", "layer.0.output"};
  auto coverage = [&](const std::string& agreement) {
    test::write_file(dir / "t.yaml", "agreement:\n" + agreement + "truth:\n  - {pattern: \"*\", atol: 1, rtol: 1}\n");
    return check_coverage(load_tolerances(dir / "t.yaml"), names);
  };
  EXPECT_TRUE(coverage("  - {pattern: \"*\", atol: 1, rtol: 1}\n").empty());
  try {
    coverage("  - {pattern: \"layer.0.attention.prob\", atol: 1, rtol: 1}\n  - {pattern: \"*\", atol: 1, rtol: 1}\n");
    FAIL() << "a typo in a tensor name must not pass";
  } catch (const InputError& e) {
    EXPECT_EQ(e.problem(), "line 2: agreement rule \"layer.0.attention.prob\" names no tensor of the trace");
  }
  const auto warnings = coverage("  - {pattern: \"*\", atol: 1, rtol: 1}\n  - {pattern: \"layer.*.probs\", atol: 1, rtol: 1}\n"
                                 "  - {pattern: \"layer.*.nothing\", atol: 1, rtol: 1}\n");
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("line 3: agreement rule \"layer.*.probs\" applies to no tensor (earlier rules take every "
                             "tensor it matches)"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("line 4: agreement rule \"layer.*.nothing\" applies to no tensor (it matches none)"),
            std::string::npos) << warnings[1];
}
