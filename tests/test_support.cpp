#include "tests/test_support.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdlib>

namespace lenscheck::test {

std::filesystem::path sentences_file() {
  const char* chosen = std::getenv("LENSCHECK_TEST_SENTENCES");
  return chosen && *chosen ? std::filesystem::path(chosen) : source_dir() / "fixtures/sentences.yaml";
}

std::filesystem::path temp_dir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string test = info ? std::string(info->test_suite_name()) + "." + info->name() : "none";
  auto dir = std::filesystem::temp_directory_path() / "lenscheck-tests" / (test + "." + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::filesystem::path one_sentence_file() {
  const std::filesystem::path file = temp_dir("one-sentence") / "sentences.yaml";
  write_file(file, "sentences:\n  - id: nurse\n    text: The nurse handed the doctor the scissors.\n");
  return file;
}

CommandResult run_cli(const std::string& args, const std::string& prefix) {
  const std::string command = prefix + LENSCHECK_CLI + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  std::string output;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

}  // namespace lenscheck::test
