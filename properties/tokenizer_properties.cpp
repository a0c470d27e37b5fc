// Properties of the WordPiece tokenizer over BERT's own uncased vocabulary (the bundled fixture's
// vocab.txt): words made of vocabulary pieces come back whole, no piece outgrows
// max_input_chars_per_word, and every id is a vocabulary id.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "model/tokenizer.h"
#include "model/vocab.h"
#include "properties/generators.h"
#include "tests/test_support.h"

namespace lenscheck {
namespace {

constexpr size_t kNoLimit = 1 << 20;

const Vocab& bert_vocab() {
  static const Vocab vocab = Vocab::load(test::bert_mini() / "vocab.txt");
  return vocab;
}

bool lower_ascii_letters(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < 'a' || c > 'z') return false;
  return true;
}

// The vocabulary's word-initial pieces and continuations ("##" + rest) made of a-z only.
struct LetterPieces {
  std::vector<std::string> initial, continuation;
};
const LetterPieces& letter_pieces() {
  static const LetterPieces pieces = [] {
    LetterPieces p;
    for (const std::string& t : bert_vocab().tokens()) {
      if (lower_ascii_letters(t)) p.initial.push_back(t);
      else if (t.rfind("##", 0) == 0 && lower_ascii_letters(std::string_view(t).substr(2)))
        p.continuation.push_back(t.substr(2));
    }
    return p;
  }();
  return pieces;
}

// A lower-case word spelled by vocabulary pieces: an initial piece and up to two continuations.
rc::Gen<std::string> vocab_word() {
  // Built once: elementOf copies its container.
  static const rc::Gen<std::string> initial = rc::gen::elementOf(letter_pieces().initial);
  static const rc::Gen<std::string> continuation = rc::gen::elementOf(letter_pieces().continuation);
  return rc::gen::exec([] {
    std::string word = *initial;
    for (const std::string& rest :
         *rc::gen::container<std::vector<std::string>>(size_t(*rc::gen::inRange(0, 3)), continuation))
      word += rest;
    return word;
  });
}

size_t code_points(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string_view without_marker(std::string_view piece) {
  return piece.rfind("##", 0) == 0 ? piece.substr(2) : piece;
}

bool is_special(const std::string& token) {
  return token == "[CLS]" || token == "[SEP]" || token == "[UNK]" || token == "[PAD]" || token == "[MASK]";
}

}  // namespace

RC_GTEST_PROP(TokenizerProperties, WhitespaceSeparatedLowerCaseVocabWordsComeBackWholeFromTheirPieces, ()) {
  const auto words = *rc::gen::nonEmpty(rc::gen::container<std::vector<std::string>>(vocab_word()));
  // Any whitespace between words, including none before the first and after the last.
  const auto gap = rc::gen::element<std::string>(" ", "  ", "\t", "\n", "\r\n", "\u3000", "\u00a0");
  std::string text = *rc::gen::element<std::string>("", " ", "\n");
  for (const std::string& word : words) text += word + *gap;
  const BertTokenizer tokenizer(bert_vocab());
  const Encoding e = tokenizer.encode(text, kNoLimit);
  RC_ASSERT(e.words == words);
  std::vector<std::string> rebuilt(words.size());
  for (size_t t = 1; t + 1 < e.tokens.size(); ++t) {
    const std::string& piece = e.tokens[t];
    const size_t w = static_cast<size_t>(e.word_ids[t]);
    RC_ASSERT(piece != "[UNK]");
    // A word's first piece is word-initial, the rest are "##" continuations.
    RC_ASSERT((piece.rfind("##", 0) == 0) == (t > 1 && e.word_ids[t - 1] == e.word_ids[t]));
    RC_ASSERT(e.ids[t] == bert_vocab().id(piece));
    rebuilt[w] += without_marker(piece);
  }
  RC_ASSERT(rebuilt == words);
}

RC_GTEST_PROP(TokenizerProperties, NoPieceHasMoreThanMaxInputCharsPerWordCharacters, ()) {
  const size_t max_chars = static_cast<size_t>(*rc::gen::inRange(1, 13));
  const std::string text = *prop::unicode_text(24);
  const BertTokenizer tokenizer(bert_vocab(), {.max_input_chars_per_word = {max_chars, "the property"}});
  bool too_long = false;
  for (const std::string& word : tokenizer.basic_tokenize(text)) {
    too_long = too_long || code_points(word) > max_chars;
    const std::vector<std::string> pieces = tokenizer.wordpiece(word);
    RC_ASSERT(!pieces.empty());
    if (code_points(word) > max_chars) RC_ASSERT(pieces == std::vector<std::string>{"[UNK]"});
    for (const std::string& piece : pieces)
      if (piece != "[UNK]") RC_ASSERT(code_points(without_marker(piece)) <= max_chars);
  }
  RC_CLASSIFY(too_long, "a word longer than max_input_chars_per_word");
  if (tokenizer.basic_tokenize(text).empty()) return;
  for (const std::string& token : tokenizer.encode(text, kNoLimit).tokens)
    if (!is_special(token)) RC_ASSERT(code_points(without_marker(token)) <= max_chars);
}

RC_GTEST_PROP(TokenizerProperties, EveryOutputIdIsAVocabularyIdWithClsFirstAndSepLast, ()) {
  const std::string text = *prop::unicode_text(24);
  const BertTokenizer tokenizer(bert_vocab());
  if (tokenizer.basic_tokenize(text).empty()) {
    RC_ASSERT_THROWS_AS(tokenizer.encode(text, kNoLimit), TokenizerError);
    return;
  }
  const Encoding e = tokenizer.encode(text, kNoLimit);
  const Vocab& vocab = bert_vocab();
  RC_ASSERT(e.ids.size() == e.tokens.size());
  RC_ASSERT(e.word_ids.size() == e.tokens.size());
  for (size_t t = 0; t < e.ids.size(); ++t) {
    RC_ASSERT(e.ids[t] >= 0);
    RC_ASSERT(e.ids[t] < static_cast<int64_t>(vocab.size()));
    RC_ASSERT(vocab.token(static_cast<int>(e.ids[t])) == e.tokens[t]);
  }
  RC_ASSERT(e.ids.front() == static_cast<int64_t>(vocab.cls_id()));
  RC_ASSERT(e.ids.back() == static_cast<int64_t>(vocab.sep_id()));
  RC_ASSERT(e.word_ids.front() == -1);
  RC_ASSERT(e.word_ids.back() == -1);
  // Between them, words count up from 0 in token order, each with at least one piece.
  RC_ASSERT(e.word_ids[1] == 0);
  for (size_t t = 2; t + 1 < e.word_ids.size(); ++t)
    RC_ASSERT(e.word_ids[t] == e.word_ids[t - 1] || e.word_ids[t] == e.word_ids[t - 1] + 1);
  RC_ASSERT(static_cast<size_t>(e.word_ids[e.word_ids.size() - 2]) + 1 == e.words.size());
}

}  // namespace lenscheck
