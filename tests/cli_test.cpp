// The command line as a user meets it: the defaults come from beside the binary, not from the current
// directory (the tests run in build/tests, where there is no fixtures/).
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
