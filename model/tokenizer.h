#pragma once
// Hugging Face BertTokenizer (do_lower_case=True, tokenize_chinese_chars=True, strip_accents=None):
// BasicTokenizer then greedy longest-match WordPiece, wrapped in [CLS] ... [SEP].
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "model/vocab.h"

namespace lenscheck {

struct Encoding {
  std::vector<int64_t> ids;
  std::vector<std::string> tokens;
  std::vector<int> word_ids;       // per token: index into words, -1 for [CLS] and [SEP]
  std::vector<std::string> words;  // the BasicTokenizer's words, after lower-casing and accent stripping
};

class TokenizerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class BertTokenizer {
 public:
  explicit BertTokenizer(const Vocab& vocab, bool do_lower_case = true,
                         size_t max_input_chars_per_word = 100);

  // Text cleanup, whitespace and CJK split, lower case + NFD accent strip, punctuation split.
  std::vector<std::string> basic_tokenize(std::string_view text) const;
  // Greedy longest-match-first pieces of one word; {"[UNK]"} when it cannot be covered.
  std::vector<std::string> wordpiece(std::string_view word) const;
  // [CLS] pieces... [SEP]. Throws TokenizerError on invalid UTF-8 or when the result has more than
  // max_tokens tokens (never truncates silently).
  Encoding encode(std::string_view text, size_t max_tokens) const;

  const Vocab& vocab() const { return vocab_; }

 private:
  const Vocab& vocab_;
  bool do_lower_case_;
  size_t max_input_chars_per_word_;
};

}  // namespace lenscheck
