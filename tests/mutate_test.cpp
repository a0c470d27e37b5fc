// The mutation catalogue: complete enough, all cases behave as declared on the bundled fixtures, and
// a weakened tolerance file shows up as a surviving mutant (the harness sees its own blind spot).
#include <gtest/gtest.h>

#include <set>

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

// The same catalogue, no case rewritten, on the init-scale fixture and on the one with trained
// statistics (sharper attention, LayerNorm outlier dimensions), both under the derived gate.
class MutateOn : public ::testing::TestWithParam<const char*> {};
INSTANTIATE_TEST_SUITE_P(Fixtures, MutateOn, ::testing::Values("bert-mini", "trained-mini"));

TEST_P(MutateOn, EveryCaseBehavesAsDeclaredAndTheScoreIsFull) {
  const Checkpoint ck = load_checkpoint(test::fixture(GetParam()));
  const auto sentences_file = test::source_dir() / "fixtures/sentences.yaml";
  const auto sentences = load_sentences(sentences_file);
  const Tolerances tol = load_tolerances(test::source_dir() / "fixtures/tolerances.yaml");
  StudyPlan plan = load_study_plan(test::source_dir() / "fixtures/studies/norm-weighted-attention.yaml");
  const Checkpoint planted = load_checkpoint(test::fixture("planted-sink"));
  const MutateResult r = run_mutations({ck, sentences, sentences_file, tol, plan, planted, ""});
  for (const CaseResult& c : r.cases) EXPECT_TRUE(c.ok()) << c.mutation->name << ": " << c.status() << " — " << c.outcome.evidence;
  EXPECT_EQ(r.killed(), r.non_equivalent());
  EXPECT_GE(r.non_equivalent(), 20u);
  EXPECT_TRUE(r.pass());
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
  const std::string args = " --model '" + test::bert_mini().string() + "' --sentences '" +
                           (test::source_dir() / "fixtures/sentences.yaml").string() + "' --plan '" +
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
                               (test::source_dir() / "fixtures/sentences.yaml").string() + "' --tolerances '" +
                               (test::source_dir() / "fixtures/tolerances.yaml").string() + "' --plan '" +
                               (test::source_dir() / "fixtures/studies/norm-weighted-attention.yaml").string() + "'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no mutation case named \"no-such-case\""), std::string::npos) << r.output;
}
