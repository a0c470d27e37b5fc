// The command line as a user meets it: the defaults come from beside the binary, not from the current
// directory (the tests run in build/tests, where there is no fixtures/), and an empty value is a value.
#include <gtest/gtest.h>

#include "tests/test_support.h"

using namespace lenscheck;

TEST(Cli, HelpNamesTheDefaultFilesOfTheBuildTree) {
  const test::CommandResult r = test::run_cli("verify --help");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--tolerances TEXT=" + (test::source_dir() / "fixtures/tolerances.yaml").string()),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--sentences TEXT=" + (test::source_dir() / "fixtures/sentences.yaml").string()),
            std::string::npos) << r.output;
}

TEST(Cli, VerifyRunsOnItsDefaultsFromAnotherDirectory) {
  ASSERT_FALSE(std::filesystem::exists("fixtures/tolerances.yaml"));
  const test::CommandResult r = test::run_cli("verify --model " + test::quoted(test::bert_mini()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("verify: PASS"), std::string::npos) << r.output;
}

TEST(Cli, AnEmptyValueAfterAnEqualsSignIsAnEmptyValue) {
  const auto out = test::temp_dir("empty") / "trace.safetensors";
  const std::string model = "trace --model " + test::quoted(test::fixture("tiny-prefixed"));
  const test::CommandResult r = test::run_cli(model + " --text= --out " + test::quoted(out));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--text: sentence \"text\": empty sentence"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
  // The same form with a value still reads as one.
  const test::CommandResult ok = test::run_cli(model + " --text='hello world' --out=" + test::quoted(out));
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_TRUE(std::filesystem::exists(out));
}

TEST(Cli, MakeFixtureRefusesTwoShapesAtOnce) {
  const auto out = test::temp_dir("two-shapes") / "model";
  const test::CommandResult r = test::run_cli("make-fixture --tiny --bert-base --out " + test::quoted(out) +
                                              " --vocab " + test::quoted(test::source_dir() / "no-such.txt"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("error: --bert-base: --tiny and --bert-base exclude each other"), std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}
