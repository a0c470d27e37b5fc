// read_tokenizer_json on arbitrary bytes; a tokenizer.json it accepts must give a tokenizer whose
// encodings are consistent: [CLS] first, [SEP] last, every id a vocabulary id naming its token.
#include "fuzz/memory_file.h"
#include "model/error.h"
#include "model/tokenizer.h"
#include "model/tokenizer_files.h"

using namespace lenscheck;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::MemoryFile file;
  TokenizerJson t;
  try {
    t = read_tokenizer_json(file.write(data, size));
  } catch (const InputError&) {
    return 0;
  }
  const Vocab& vocab = t.vocab;
  fuzz::require(vocab.size() >= 5 && t.max_input_chars_per_word >= 1);
  for (int i = 0; i < static_cast<int>(vocab.size()); ++i) fuzz::require(vocab.id(vocab.token(i)) == i);
  TokenizerSettings settings;
  settings.lower_case.value = t.lowercase;
  settings.strip_accents.value = t.strip_accents;
  settings.split_chinese_chars.value = t.handle_chinese_chars;
  settings.max_input_chars_per_word.value = t.max_input_chars_per_word;
  const BertTokenizer tokenizer(vocab, settings);
  const Encoding e = tokenizer.encode("The nurse's café, 中文 [SEP] unaffable.", 512);
  const size_t n = e.ids.size();
  fuzz::require(n >= 3 && e.tokens.size() == n && e.ids.front() == vocab.cls_id() && e.ids.back() == vocab.sep_id());
  for (size_t i = 0; i < n; ++i)
    fuzz::require(e.ids[i] >= 0 && static_cast<size_t>(e.ids[i]) < vocab.size() &&
                  vocab.token(static_cast<int>(e.ids[i])) == e.tokens[i]);
  return 0;
}
