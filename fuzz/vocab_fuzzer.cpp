// Vocab::load on arbitrary bytes; a vocabulary it accepts maps ids and tokens both ways and survives
// write_vocab and back unchanged.
#include "fuzz/memory_file.h"
#include "model/error.h"
#include "model/vocab.h"

using namespace lenscheck;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::MemoryFile file;
  Vocab v;
  try {
    v = Vocab::load(file.write(data, size));
  } catch (const InputError&) {
    return 0;
  }
  for (size_t i = 0; i < v.size(); ++i) fuzz::require(v.id(v.token(static_cast<int>(i))) == static_cast<int>(i));
  for (int special : {v.pad_id(), v.unk_id(), v.cls_id(), v.sep_id(), v.mask_id()})
    fuzz::require(special >= 0 && static_cast<size_t>(special) < v.size());
  write_vocab(file.path(), v.tokens());
  fuzz::require(Vocab::load(file.path()).tokens() == v.tokens());
  return 0;
}
