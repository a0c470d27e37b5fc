#pragma once
// Bad input is an InputError: it names the file and the problem, and the CLI turns it into exit code 2.
#include <filesystem>
#include <stdexcept>
#include <string>

namespace lenscheck {

class InputError : public std::runtime_error {
 public:
  InputError(const std::filesystem::path& file, const std::string& problem)
      : std::runtime_error(file.string() + ": " + problem), file_(file), problem_(problem) {}
  const std::filesystem::path& file() const { return file_; }
  const std::string& problem() const { return problem_; }

 private:
  std::filesystem::path file_;
  std::string problem_;
};

// A NaN or Inf where the gate needs a number (a lens weight, a row total): a gate failure, never bad
// input and never an undefined row. The CLI turns it into exit code 1, with what and where.
class NonFiniteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace lenscheck
