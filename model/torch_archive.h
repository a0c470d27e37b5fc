#pragma once
// A PyTorch checkpoint as torch.save writes it since PyTorch 1.6 (a Hugging Face pytorch_model.bin): a
// zip archive of <archive>/data.pkl, the pickled state dict, and one entry <archive>/data/<key> per
// storage, its elements raw and little-endian. data.pkl is interpreted, never run: by the rules of
// torch.load(weights_only=True) (torch/_weights_only_unpickler.py), cut down to what a state dict needs,
// so that any other global or opcode is an InputError naming it. The legacy format (a bare pickle
// stream, before PyTorch 1.6) is refused with the command that converts it.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "model/safetensors.h"
#include "model/zip_archive.h"

namespace lenscheck {

struct TorchTensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  // Where its elements lie: in the archive entry of its storage, from storage_offset, `stride` elements
  // apart along each dimension (a view: transposed, expanded or a slice of a shared storage).
  std::string storage;
  uint64_t storage_offset = 0;
  std::vector<int64_t> stride;
  uint64_t numel() const;
};

class TorchArchive {
 public:
  // Reads the zip archive and interprets data.pkl, checking every view against its storage; throws
  // InputError naming the file and the problem.
  static TorchArchive open(const std::filesystem::path& file);

  const std::filesystem::path& path() const { return zip_.path(); }
  const std::vector<TorchTensor>& entries() const { return entries_; }  // in the state dict's order
  const TorchTensor* find(const std::string& name) const;
  // Floating dtypes converted to float (F16, BF16 and F64 as SafetensorsFile::read_f32 converts them),
  // row-major whatever the view's strides.
  std::vector<float> read_f32(const TorchTensor& tensor) const;

 private:
  ZipArchive zip_;
  std::vector<TorchTensor> entries_;
  std::map<std::string, size_t> index_;  // name -> position in entries_, for find()
};

}  // namespace lenscheck
