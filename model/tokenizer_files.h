#pragma once
// The tokenizer a checkpoint folder ships, read as Hugging Face's BertTokenizerFast and
// sentence-transformers read it: modules.json (which folder holds the Transformer module),
// sentence_bert_config.json, tokenizer_config.json, tokenizer.json and vocab.txt. Anything lenscheck
// would tokenize differently from them is an InputError naming the file, never a silent difference.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/tokenizer.h"
#include "model/vocab.h"

namespace lenscheck {

// The folder holding config.json: the sentence-transformers Transformer module's, as modules.json
// names it (path "" is the folder itself), or the folder itself when there is no modules.json.
struct TransformerFolder {
  std::filesystem::path dir;
  std::string from;  // how it was found, for `lenscheck inspect`
};
TransformerFolder transformer_folder(const std::filesystem::path& folder);

// A tokenizer.json of BERT's kind: model WordPiece ("##" continuations, unk_token [UNK]), normalizer
// BertNormalizer (clean_text true), pre_tokenizer BertPreTokenizer, a post_processor that wraps a
// sentence in [CLS] … [SEP], added tokens only the five special ones. Anything else is an InputError
// naming the file and the kind.
struct TokenizerJson {
  Vocab vocab;
  size_t max_input_chars_per_word = 0;
  // The normalizer's flags; BertTokenizerFast overrides them with tokenizer_config.json's (or its defaults).
  bool lowercase = true, handle_chinese_chars = true;
  std::optional<bool> strip_accents;
};
TokenizerJson read_tokenizer_json(const std::filesystem::path& file);

struct CheckpointTokenizer {
  Vocab vocab;
  std::filesystem::path vocab_file;  // tokenizer.json where there is one (as HF's fast tokenizer), else vocab.txt
  TokenizerSettings settings;
  std::vector<std::string> notes;    // what the user should know: a file checked against another, a flag overridden
};
// Where a model's tokenizer is read from: a folder as a checkpoint ships it (tokenizer.json where there is
// one, as HF's fast tokenizer reads it, else vocab.txt; tokenizer_config.json and sentence_bert_config.json
// beside them), or one vocabulary file in it named (`file`: a tokenizer.json by its .json name, else a
// vocab.txt). `sizes_from` is the file that gave the model's vocab_size and max_position_embeddings
// (config.json, or the graph read as a checkpoint), which the errors and notes name.
struct TokenizerSource {
  std::filesystem::path dir;
  std::filesystem::path file{};
  std::filesystem::path sizes_from;
};
// The vocabulary and settings, for a model of `config`: max tokens is the smallest of
// max_position_embeddings, tokenizer_config.json's model_max_length and sentence_bert_config.json's
// max_seq_length. Where vocab.txt and tokenizer.json are both read they must hold the same tokens with the
// same ids.
CheckpointTokenizer load_tokenizer(const TokenizerSource& source, const BertConfig& config);

}  // namespace lenscheck
