#pragma once
// Hugging Face BertTokenizer: BasicTokenizer then greedy longest-match WordPiece, wrapped in
// [CLS] ... [SEP], with the settings a checkpoint's files give it (model/tokenizer_files.h).
#include <cstdint>
#include <limits>
#include <optional>
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

// A tokenizer setting and where its value came from ("do_lower_case in …/tokenizer_config.json"), for
// `lenscheck inspect` and for the error that a limit gives.
template <class T>
struct Setting {
  T value;
  std::string from;
};

// What HF's BertTokenizerFast and sentence-transformers take from a checkpoint's files; the defaults
// are BertTokenizerFast's own, which it applies when tokenizer_config.json is silent.
struct TokenizerSettings {
  Setting<bool> lower_case{true, "BertTokenizerFast's default"};  // per character, as the normalizer does
  Setting<std::optional<bool>> strip_accents{std::nullopt, "BertTokenizerFast's default"};  // unset: as lower_case
  Setting<bool> split_chinese_chars{true, "BertTokenizerFast's default"};
  // sentence-transformers' do_lower_case: str.lower() on the whole text before the tokenizer sees it.
  Setting<bool> lower_whole_text{false, "no sentence_bert_config.json"};
  Setting<size_t> max_input_chars_per_word{100, "BertTokenizerFast's default"};
  // The most tokens a sentence may have, [CLS] and [SEP] included: longer is an error, never truncated.
  Setting<size_t> max_tokens{std::numeric_limits<size_t>::max(), "no limit"};

  bool strips_accents() const { return strip_accents.value.value_or(lower_case.value); }
};

class BertTokenizer {
 public:
  explicit BertTokenizer(const Vocab& vocab, TokenizerSettings settings = {});

  // Text cleanup, whitespace and CJK split, lower case + NFD accent strip, punctuation split.
  std::vector<std::string> basic_tokenize(std::string_view text) const;
  // Greedy longest-match-first pieces of one word; {"[UNK]"} when it cannot be covered.
  std::vector<std::string> wordpiece(std::string_view word) const;
  // [CLS] pieces... [SEP]. Throws TokenizerError on invalid UTF-8 or when the result has more tokens
  // than max_position_embeddings (the caller's max_tokens) or the settings' max_tokens, the smaller
  // one named (never truncates silently).
  Encoding encode(std::string_view text, size_t max_position_embeddings) const;

  const Vocab& vocab() const { return vocab_; }
  const TokenizerSettings& settings() const { return settings_; }

 private:
  const Vocab& vocab_;
  TokenizerSettings settings_;
};

}  // namespace lenscheck
