// BertTokenizer::encode on arbitrary bytes with BERT's uncased vocabulary; an encoding it returns must
// be consistent: [CLS] first, [SEP] last, every id a vocabulary id, word ids counting up.
#include <cstdlib>

#include "fuzz/memory_file.h"
#include "model/tokenizer.h"
#include "model/vocab.h"

using namespace lenscheck;

namespace {

const Vocab& bert_vocab() {
  static const Vocab vocab = Vocab::load(LENSCHECK_BERT_VOCAB);
  return vocab;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const BertTokenizer tokenizer(bert_vocab());
  const Vocab& vocab = tokenizer.vocab();
  Encoding e;
  try {
    e = tokenizer.encode(std::string_view(reinterpret_cast<const char*>(data), size), 512);
  } catch (const TokenizerError&) {
    return 0;
  }
  const size_t n = e.ids.size();
  fuzz::require(n >= 3 && n <= 512 && e.tokens.size() == n && e.word_ids.size() == n && !e.words.empty());
  fuzz::require(e.ids.front() == vocab.cls_id() && e.ids.back() == vocab.sep_id());
  fuzz::require(e.word_ids.front() == -1 && e.word_ids.back() == -1);
  int word = 0;
  for (size_t i = 1; i + 1 < n; ++i) {
    fuzz::require(e.ids[i] >= 0 && vocab.token(static_cast<int>(e.ids[i])) == e.tokens[i]);
    fuzz::require(e.word_ids[i] == word || e.word_ids[i] == word + 1);
    word = e.word_ids[i];
  }
  fuzz::require(static_cast<size_t>(word) + 1 == e.words.size());
  return 0;
}
