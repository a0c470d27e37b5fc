#pragma once
// Generated corpora for audits at scale: `lenscheck make-corpus` writes N sentences, one per line,
// drawn from a small English grammar by a seed. The same seed writes the same file everywhere.
#include <cstdint>
#include <filesystem>
#include <string>

namespace lenscheck {

std::string generated_sentence(uint64_t seed, uint64_t index);

void write_corpus(const std::filesystem::path& out, size_t sentences, uint64_t seed);

}  // namespace lenscheck
