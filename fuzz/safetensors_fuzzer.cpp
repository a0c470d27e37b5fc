// SafetensorsFile::open on arbitrary bytes, then every tensor read in every way its dtype allows.
#include "fuzz/memory_file.h"
#include "model/error.h"
#include "model/safetensors.h"

using namespace lenscheck;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::MemoryFile file;
  try {
    const SafetensorsFile st = SafetensorsFile::open(file.write(data, size));
    uint64_t end = 0;
    for (const TensorEntry& e : st.entries()) {
      fuzz::require(st.find(e.name) == &e && e.begin == end);  // entries tile the data in order
      end = e.end;
      const bool floating = e.dtype == DType::F64 || e.dtype == DType::F32 || e.dtype == DType::F16 ||
                            e.dtype == DType::BF16;
      if (floating) {
        fuzz::require(st.read_f32(e).size() == e.numel() && st.read_f64(e).size() == e.numel());
      } else {
        fuzz::require(st.read_i64(e).size() == e.numel());
      }
    }
    fuzz::require(8 + end <= size);
  } catch (const InputError&) {
  }
  return 0;
}
