// The mutation catalogue: complete enough, all cases behave as declared on the bundled fixtures, and
// a weakened tolerance file shows up as a surviving mutant (the harness sees its own blind spot).
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <stdexcept>

#include "mutations/mutate.h"
#include "tests/test_support.h"

using namespace lenscheck;
using namespace lenscheck::mutation;

TEST(Catalogue, HasAtLeastSixMetricCasesAndTwentyImplementationMutantsWithUniqueNames) {
  size_t metric = 0, implementation = 0;
  std::set<std::string> names;
  for (const Case* c : sorted_catalogue()) {
    EXPECT_TRUE(names.insert(c->name).second) << c->name;
    EXPECT_FALSE(c->description.empty()) << c->name;
    EXPECT_TRUE(c->run) << c->name;
    (c->kind == Kind::metric ? metric : implementation)++;
  }
  EXPECT_GE(metric, 6u);
  EXPECT_GE(implementation, 20u);
}

namespace {

const CaseResult& result_of(const MutateResult& r, const std::string& name) {
  for (const CaseResult& c : r.cases)
    if (c.mutation->name == name) return c;
  throw std::out_of_range(name);
}

// Each fixture's run once, shared by the tests that read it.
const MutateResult& mutate_on(const std::string& fixture) {
  static std::map<std::string, MutateResult> runs;
  if (const auto it = runs.find(fixture); it != runs.end()) return it->second;
  const Checkpoint ck = load_checkpoint(test::fixture(fixture));
  const auto sentences_file = test::sentences_file();
  const auto sentences = load_sentences(sentences_file);
  const Tolerances tol = load_tolerances(test::source_dir() / "fixtures/tolerances.yaml");
  StudyPlan plan = load_study_plan(test::source_dir() / "fixtures/studies/norm-weighted-attention.yaml");
  const Checkpoint planted = load_checkpoint(test::fixture("planted-sink"));
  return runs[fixture] = run_mutations({ck, sentences, sentences_file, tol, plan, planted, ""});
}

}  // namespace

// The same catalogue, no case rewritten, on the init-scale fixture, the one with trained statistics
// (sharper attention, LayerNorm outlier dimensions), the planted sink (where four mutants are
// equivalent by construction) and the saturated one (one-hot rows, scores past fp32's exp range,
// rows without any weight), all under the derived gate.
class MutateOn : public ::testing::TestWithParam<const char*> {};
INSTANTIATE_TEST_SUITE_P(Fixtures, MutateOn,
                         ::testing::Values("bert-mini", "trained-mini", "planted-sink", "saturated-sink"));

TEST_P(MutateOn, EveryCaseBehavesAsDeclaredAndTheScoreIsFull) {
  const MutateResult& r = mutate_on(GetParam());
  for (const CaseResult& c : r.cases) EXPECT_TRUE(c.ok()) << c.mutation->name << ": " << c.status() << " — " << c.outcome.evidence;
  EXPECT_EQ(r.killed(), r.non_equivalent());
  EXPECT_GE(r.non_equivalent(), 17u);
  EXPECT_EQ(r.with(Equivalence::Verdict::borderline), 0u);
  EXPECT_TRUE(r.pass());
}

// The equivalence of softmax without its maximum is a condition on the model: scores within fp32's
// exp range. On soft attention it holds and the mutant survives; where scores reach 120 it fails, and
// the mutant is an ordinary one that the gate kills.
TEST(Mutate, ConditionalEquivalenceIsDecidedPerModelAndTheVerdictFollowsIt) {
  const MutateResult &soft = mutate_on("bert-mini"), &saturated = mutate_on("saturated-sink");
  const CaseResult& on_soft = result_of(soft, "softmax-without-max");
  EXPECT_EQ(on_soft.equivalence.verdict, Equivalence::Verdict::equivalent) << on_soft.equivalence.why;
  EXPECT_FALSE(on_soft.outcome.caught);
  const CaseResult& on_saturated = result_of(saturated, "softmax-without-max");
  EXPECT_EQ(on_saturated.equivalence.verdict, Equivalence::Verdict::ordinary) << on_saturated.equivalence.why;
  EXPECT_TRUE(on_saturated.outcome.caught);
  EXPECT_NE(on_saturated.equivalence.why.find("log(FLT_MAX)"), std::string::npos);
  // The structural conditions hold on the constructed weights only: unit LayerNorm gains, zero
  // position and token type embeddings.
  for (const char* name : {"layer-norm-without-gamma", "position-ids-shifted", "token-type-dropped",
                           "half-precision-ffn-output"}) {
    EXPECT_EQ(result_of(soft, name).equivalence.verdict, Equivalence::Verdict::ordinary) << name;
    EXPECT_EQ(result_of(saturated, name).equivalence.verdict, Equivalence::Verdict::equivalent) << name;
  }
  // The metric cases count the rows that cannot move, and those left without weight, apart.
  // On the saturated sink (14 sentences: 2240 rows, 1680 moved, 420 saturated, 140 undefined) both kinds
  // occur, and every row is counted once.
  const std::string& zero_sep = result_of(saturated, "zero-sep-norm").outcome.evidence;
  std::smatch n;
  ASSERT_TRUE(std::regex_search(zero_sep, n,
                                std::regex(R"((\d+) rows checked: (\d+) moved .* (\d+) rows saturated, (\d+) with no )"
                                           R"(resolvable .* (\d+) left undefined)")))
      << zero_sep;
  const auto count = [&](int i) { return std::stoul(n[i].str()); };
  EXPECT_GT(count(3), 0u) << zero_sep;
  EXPECT_GT(count(5), 0u) << zero_sep;
  EXPECT_EQ(count(2) + count(3) + count(4) + count(5), count(1)) << zero_sep;
}

TEST(Mutate, AWeakenedToleranceFileLetsANamedMutantSurvive) {
  const auto dir = test::temp_dir("weak");
  // A catch-all rule of k 1e9 put first takes every tensor: LayerNorm eps 1e-5 moves the embeddings
  // by 1.5e-2, some 1e5 times libtorch's own error, under that bound, and nothing downstream by more.
  std::string weak = test::read_file(test::source_dir() / "fixtures/tolerances.yaml");
  const size_t at = weak.find("  rules:\n");
  ASSERT_NE(at, std::string::npos);
  weak.insert(at + std::string("  rules:\n").size(), "    - {pattern: \"*\", k: 1.0e9}\n");
  test::write_file(dir / "weak.yaml", weak);
  // One sentence: the mutant moves every embedding, so any sentence shows it (reports/mutate.md: the
  // first kills it).
  const std::string args = " --model '" + test::bert_mini().string() + "' --sentences '" +
                           test::one_sentence_file().string() + "' --plan '" +
                           (test::source_dir() / "fixtures/studies/norm-weighted-attention.yaml").string() + "'";
  auto r = test::run_cli("mutate --only layer-norm-eps-1e-5 --tolerances '" + (dir / "weak.yaml").string() + "'" + args);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("layer-norm-eps-1e-5          SURVIVED"), std::string::npos) << r.output;
  // The committed tolerances kill it.
  r = test::run_cli("mutate --only layer-norm-eps-1e-5 --tolerances '" +
                    (test::source_dir() / "fixtures/tolerances.yaml").string() + "'" + args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("killed"), std::string::npos) << r.output;
}

TEST(Mutate, AnUnknownCaseIsBadInput) {
  const auto r = test::run_cli("mutate --only no-such-case --model '" + test::bert_mini().string() + "' --sentences '" +
                               test::sentences_file().string() + "' --tolerances '" +
                               (test::source_dir() / "fixtures/tolerances.yaml").string() + "' --plan '" +
                               (test::source_dir() / "fixtures/studies/norm-weighted-attention.yaml").string() + "'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no mutation case named \"no-such-case\""), std::string::npos) << r.output;
}
