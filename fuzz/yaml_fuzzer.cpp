// The strict YAML readers (sentences and tolerances files) on arbitrary bytes: an InputError naming the
// file is the only acceptable complaint; a YAML exception escaping them would abort the CLI.
#include "fuzz/memory_file.h"
#include "common/sentences.h"
#include "gate/tolerances.h"
#include "model/error.h"

using namespace lenscheck;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::MemoryFile file;
  const std::filesystem::path path = file.write(data, size);
  try {
    for (const Sentence& s : load_sentences(path)) fuzz::require(s.line > 0);
  } catch (const InputError& e) {
    fuzz::require(e.file() == path);
  }
  try {
    const Tolerances t = load_tolerances(path);
    fuzz::require(t.floor > 0);
    for (const Tolerance& r : t.derived.rules) fuzz::require(!r.pattern.empty() && r.k > 0);
    for (const Tolerance& r : t.absolute.rules) fuzz::require(!r.pattern.empty() && r.atol >= 0 && r.rtol >= 0);
  } catch (const InputError& e) {
    fuzz::require(e.file() == path);
  }
  return 0;
}
