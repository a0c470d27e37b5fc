#include "cli/arguments.h"

namespace lenscheck::cli {

Arguments::Arguments(int argc, const char* const* argv) {
  bool options_ended = false;  // after "--" every argument is a value as it stands
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    options_ended = options_ended || a == "--";
    if (!options_ended && i > 0 && a.starts_with("--") && a.find('=') == a.size() - 1) {
      arguments_.push_back(a.substr(0, a.size() - 1));
      arguments_.emplace_back();
    } else {
      arguments_.push_back(a);
    }
  }
  for (const std::string& a : arguments_) pointers_.push_back(a.c_str());
}

}  // namespace lenscheck::cli
