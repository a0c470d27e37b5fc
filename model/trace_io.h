#pragma once
// Traces on disk are safetensors files: every tensor under its canonical name, the token ids as an I64
// tensor "input_ids", and the tokens, word ids, producer and precision in __metadata__. A trace written
// by another implementation (a Python script, say) needs only input_ids and the tensors.
#include <filesystem>

#include "model/trace.h"
#include "model/vocab.h"

namespace lenscheck {

void save_trace(const std::filesystem::path& file, const Trace& trace);
// Tokens missing from the metadata are looked up in `vocab`; word ids missing are left empty.
Trace load_trace(const std::filesystem::path& file, const Vocab& vocab);

}  // namespace lenscheck
