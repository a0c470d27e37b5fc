#pragma once
// fixtures/sentences.yaml: the sentences the instrument shows, each with a short id.
#include <filesystem>
#include <fstream>
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

// Sentences a batch at a time, for audits at scale. A `.txt` corpus holds one sentence per line
// (id `line-N`; blank lines are skipped) and is streamed; any other file is a sentences YAML,
// read whole.
class SentenceStream {
 public:
  explicit SentenceStream(const std::filesystem::path& file);
  std::vector<Sentence> next(size_t max);  // empty at the end
  size_t total() const { return total_; }

 private:
  std::vector<Sentence> loaded_;  // a YAML file's sentences
  std::ifstream corpus_;          // a .txt corpus
  size_t total_ = 0, taken_ = 0;
  int line_ = 0;
};

// Tokenises one sentence; an empty, invalid or over-long sentence is an InputError naming the file,
// the line and the sentence id.
Encoding encode_sentence(const BertTokenizer& tokenizer, const Sentence& sentence,
                         size_t max_tokens, const std::filesystem::path& file);

}  // namespace lenscheck
