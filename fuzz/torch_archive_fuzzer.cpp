// TorchArchive::open on arbitrary bytes, then every floating tensor read. An input that is not a zip
// archive (one that does not start with "PK") is taken as data.pkl and put in torch.save's archive beside
// five storages of 64 bytes, data/0 to data/4, as in the seeds (fixtures/fuzz/torch_archive/: a state
// dict torch 1.13 saved, and its data.pkl): the CRC-32 every zip entry must match would otherwise stop
// nearly every change to the pickle at the zip reader.
#include "fuzz/memory_file.h"
#include "model/error.h"
#include "model/torch_archive.h"
#include "tests/torch_archive_writer.h"

using namespace lenscheck;

namespace {

// A stride-0 view may name far more elements than its storage holds (load_checkpoint reads none larger
// than its config's shapes). Reading 2^20 of them took most of the first run's time (1 228 inputs a
// second); larger views only repeat the same reads, so the fuzzer reads views of up to 2^12 elements.
constexpr uint64_t kMaxElementsRead = 1 << 12;

std::vector<std::pair<std::string, std::string>> storages() {
  std::vector<std::pair<std::string, std::string>> out;
  for (int key = 0; key < 5; ++key) {
    std::string bytes(64, '\0');
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(key * 64 + i * 37);
    out.emplace_back(std::to_string(key), bytes);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::MemoryFile file;
  static const auto wrapped_storages = storages();
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::string archive = input.rfind("PK", 0) == 0 ? input : test::torch_archive_of(input, wrapped_storages);
  try {
    const TorchArchive t =
        TorchArchive::open(file.write(reinterpret_cast<const uint8_t*>(archive.data()), archive.size()));
    for (const TorchTensor& e : t.entries()) {
      fuzz::require(t.find(e.name) == &e);
      if (is_floating(e.dtype) && e.numel() <= kMaxElementsRead) fuzz::require(t.read_f32(e).size() == e.numel());
    }
  } catch (const InputError&) {
  }
  return 0;
}
