#pragma once
// Paths and small helpers shared by the tests.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace lenscheck::test {

inline std::filesystem::path source_dir() { return LENSCHECK_SOURCE_DIR; }
inline std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(LENSCHECK_FIXTURE_DIR) / name;
}
inline std::filesystem::path bert_mini() { return fixture("bert-mini"); }
// The sentences the end-to-end tests run on: fixtures/sentences.yaml, or the file the environment
// variable LENSCHECK_TEST_SENTENCES names (scripts/sanitize.sh: a shorter one).
std::filesystem::path sentences_file();

// A fresh, empty temporary directory named after the running test.
std::filesystem::path temp_dir(const std::string& name);

// A sentences file of one sentence (fixtures/sentences.yaml's first), in the running test's temporary
// folder: for the tests whose check any sentence shows.
std::filesystem::path one_sentence_file();

struct CommandResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};
// Runs the lenscheck CLI with `args` (shell-quoted by the caller, with quoted()); `prefix` runs it under
// another command, e.g. "prlimit --as=N ".
CommandResult run_cli(const std::string& args, const std::string& prefix = "");

inline std::string quoted(const std::filesystem::path& p) {
  std::string s = "'";  // appended, not "'" + ...: GCC 12 warns -Wrestrict on that at -O3
  s += p.string();
  return s += "'";
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
inline void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

}  // namespace lenscheck::test
