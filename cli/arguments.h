#pragma once
// The command line as CLI11 should read it. CLI11 2.1 takes "--text=" (an empty value) for "--text"
// with its value still to come, and so swallows the next argument ("--out") as the value; given as two
// arguments, "--text" "", the empty value is read as itself.
#include <string>
#include <vector>

namespace lenscheck::cli {

class Arguments {
 public:
  Arguments(int argc, const char* const* argv);
  int argc() const { return static_cast<int>(pointers_.size()); }
  const char* const* argv() const { return pointers_.data(); }

 private:
  std::vector<std::string> arguments_;
  std::vector<const char*> pointers_;  // into arguments_
};

}  // namespace lenscheck::cli
