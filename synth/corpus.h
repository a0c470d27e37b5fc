#pragma once
// Corpora for audits at scale, one sentence per line: `lenscheck make-corpus` writes N sentences drawn
// from a small English grammar by a seed (the same seed writes the same file everywhere), or the
// sentences of English text files (`--from`), split by split_sentences.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace lenscheck {

std::string generated_sentence(uint64_t seed, uint64_t index);

void write_corpus(const std::filesystem::path& out, size_t sentences, uint64_t seed);

// The sentences of a paragraph of English prose, whitespace collapsed. A sentence ends at `.`, `!`
// or `?` (runs of them, as in `?!` or `...`, and the closing quotes and brackets after them) that is
// followed by a space and a capital letter, or an opening quote or bracket and one, or by the end of
// the paragraph. A point is no end inside a number (3.5), after an initial (J. Q. Adams), dotted
// initials (U.S., e.g.) or a title or reference abbreviation that precedes a name or number (Mr.,
// Dr., St., No., vol.). A sentence may still end in an abbreviation that ends one (etc., Inc.).
std::vector<std::string> split_sentences(std::string_view paragraph);

struct TextCorpus {
  size_t sentences = 0;  // written
  size_t too_long = 0;   // left out: more than max_words words
};

// The sentences of each text file, paragraph by paragraph (a blank line ends a paragraph; no sentence
// crosses one; a paragraph is held at a time, never a file), one per line into `out`. A sentence of
// more than `max_words` words is left out and counted (the audit refuses one the model cannot hold).
// A file that cannot be read, or texts without a sentence, are an InputError.
TextCorpus write_corpus_from_text(const std::vector<std::filesystem::path>& texts, const std::filesystem::path& out,
                                  size_t max_words);

}  // namespace lenscheck
