#pragma once
// fixtures/sentences.yaml: the sentences the instrument shows, each with a short id.
#include <filesystem>
#include <string>
#include <vector>

#include "model/tokenizer.h"

namespace lenscheck {

struct Sentence {
  std::string id;
  std::string text;
  int line = 0;
};

std::vector<Sentence> load_sentences(const std::filesystem::path& file);

// Tokenises one sentence; an empty, invalid or over-long sentence is an InputError naming the file,
// the line and the sentence id.
Encoding encode_sentence(const BertTokenizer& tokenizer, const Sentence& sentence,
                         size_t max_tokens, const std::filesystem::path& file);

}  // namespace lenscheck
