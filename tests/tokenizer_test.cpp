// Golden tests of Vocab and BertTokenizer against the real BERT uncased vocabulary.
//
// Where the goldens come from: "Hello, world!" and "unaffable" are published outputs of
// BertTokenizer.from_pretrained("bert-base-uncased"). The others come from a line-by-line Python
// transcription of HF's code (tokenization_bert.py's BasicTokenizer and WordpieceTokenizer, plus the
// lower-casing and special-token split of PreTrainedTokenizer.tokenize; CPython 3.11 unicodedata)
// run over this vocabulary, and were checked by reasoning; each test says which HF step decides it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "model/error.h"
#include "model/tokenizer.h"
#include "model/vocab.h"

namespace lenscheck {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;
using Tokens = std::vector<std::string>;
using Ids = std::vector<int64_t>;

const Vocab& bert_vocab() {
  static const Vocab vocab = Vocab::load(LENSCHECK_BERT_VOCAB);
  return vocab;
}

const BertTokenizer& bert() {
  static const BertTokenizer tokenizer(bert_vocab());
  return tokenizer;
}

// Hand-made vocab files in a fresh temporary directory, removed after each test.
class VocabFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lenscheck_tokenizer_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write(const std::string& name, const std::string& bytes) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  fs::path dir_;
};

// Message of the InputError thrown by f; fails the test when none is thrown.
template <class F>
std::string input_error(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError";
  return {};
}

template <class F>
std::string tokenizer_error(F f) {
  try {
    f();
  } catch (const TokenizerError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no TokenizerError";
  return {};
}

// The five special tokens, as vocab.txt lines.
std::string specials_lines() { return "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n"; }

void expect_encoding(const std::string& text, const Tokens& tokens, const Ids& ids) {
  SCOPED_TRACE(text);
  const Encoding e = bert().encode(text, 512);
  EXPECT_EQ(e.tokens, tokens);
  EXPECT_EQ(e.ids, ids);
}

// ---------------------------------------------------------------- Vocab

TEST(Vocab, BertUncasedIds) {
  const Vocab& v = bert_vocab();
  EXPECT_EQ(v.size(), 30522u);
  EXPECT_EQ(v.pad_id(), 0);
  EXPECT_EQ(v.unk_id(), 100);
  EXPECT_EQ(v.cls_id(), 101);
  EXPECT_EQ(v.sep_id(), 102);
  EXPECT_EQ(v.mask_id(), 103);
  EXPECT_EQ(v.id("the"), 1996);
  EXPECT_EQ(v.id("hello"), 7592);
  EXPECT_EQ(v.id("world"), 2088);
  EXPECT_EQ(v.id("##ing"), 2075);
  EXPECT_EQ(v.id("!"), 999);
  EXPECT_EQ(v.token(1), "[unused0]");
  EXPECT_EQ(v.token(2), "[unused1]");
  EXPECT_EQ(v.id("["), 1031);  // bracket pieces are words, not bracketed tokens
  EXPECT_EQ(v.id("no-such-token"), -1);
}

TEST_F(VocabFiles, WriteThenLoadRoundTrips) {
  const fs::path file = dir_ / "vocab.txt";
  write_vocab(file, bert_vocab().tokens());
  const Vocab v = Vocab::load(file);
  EXPECT_EQ(v.tokens(), bert_vocab().tokens());
}

TEST_F(VocabFiles, LoadStripsCarriageReturnAndFinalNewline) {
  const Vocab v = Vocab::load(write("vocab.txt", "[PAD]\r\n[UNK]\r\n[CLS]\n[SEP]\n[MASK]\nhello\n"));
  EXPECT_EQ(v.tokens(), (Tokens{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello"}));
  EXPECT_EQ(v.unk_id(), 1);
  // Without a final newline the last line is still a token.
  EXPECT_EQ(Vocab::load(write("v2.txt", specials_lines() + "x")).size(), 6u);
}

TEST_F(VocabFiles, LoadRejectsDuplicateToken) {
  const fs::path file = write("vocab.txt", specials_lines() + "hello\nworld\nhello\n");
  const std::string msg = input_error([&] { Vocab::load(file); });
  EXPECT_NE(msg.find(file.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("duplicate token \"hello\" on lines 6 and 8"), std::string::npos) << msg;
}

TEST_F(VocabFiles, LoadRejectsMissingSpecialTokens) {
  const fs::path file = write("vocab.txt", "[PAD]\n[UNK]\n[SEP]\nhello\n");
  const std::string msg = input_error([&] { Vocab::load(file); });
  EXPECT_NE(msg.find(file.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing special tokens: [CLS], [MASK]"), std::string::npos) << msg;
}

TEST_F(VocabFiles, LoadRejectsInvalidUtf8) {
  const fs::path file = write("vocab.txt", specials_lines() + "ok\nbad\xC3(\n");
  const std::string msg = input_error([&] { Vocab::load(file); });
  EXPECT_NE(msg.find(file.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 7: invalid UTF-8"), std::string::npos) << msg;
}

TEST_F(VocabFiles, LoadRejectsUnreadableFile) {
  const std::string msg = input_error([&] { Vocab::load(dir_ / "absent.txt"); });
  EXPECT_NE(msg.find("absent.txt: cannot open"), std::string::npos) << msg;
}

TEST(Vocab, FromTokensNamesOrigin) {
  const std::string msg =
      input_error([] { Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]"}, "memory"); });
  EXPECT_EQ(msg, "memory: missing special tokens: [MASK]");
}

// ---------------------------------------------------------------- BertTokenizer goldens

TEST(Tokenizer, PlainSentence) {
  // Published HF output: ["hello", ",", "world", "!"].
  expect_encoding("Hello, world!", {"[CLS]", "hello", ",", "world", "!", "[SEP]"},
                  {101, 7592, 1010, 2088, 999, 102});
}

TEST(Tokenizer, MultiPieceWords) {
  // Published HF output for "unaffable": una ##ffa ##ble. The rest is greedy longest-match over the
  // vocab: "tokenization" = token + ##ization; "hyperparameters" = hyper ##para ##meter ##s.
  expect_encoding("unaffable", {"[CLS]", "una", "##ffa", "##ble", "[SEP]"}, {101, 14477, 20961, 3468, 102});
  expect_encoding("The unaffable tokenization of hyperparameters",
                  {"[CLS]", "the", "una", "##ffa", "##ble", "token", "##ization", "of", "hyper",
                   "##para", "##meter", "##s", "[SEP]"},
                  {101, 1996, 14477, 20961, 3468, 19204, 3989, 1997, 23760, 28689, 22828, 2015, 102});
}

TEST(Tokenizer, WordIdsFollowBasicWords) {
  const Encoding e = bert().encode("The unaffable tokenization", 512);
  EXPECT_EQ(e.words, (Tokens{"the", "unaffable", "tokenization"}));
  EXPECT_EQ(e.word_ids, (std::vector<int>{-1, 0, 1, 1, 1, 2, 2, -1}));
  // Punctuation splits off as words of its own.
  const Encoding p = bert().encode("don't", 512);
  EXPECT_EQ(p.words, (Tokens{"don", "'", "t"}));
  EXPECT_EQ(p.word_ids, (std::vector<int>{-1, 0, 1, 2, -1}));
}

TEST(Tokenizer, AccentsAreStripped) {
  // lower(), then NFD and drop Mn: café -> cafe, naïve -> naive, résumé -> resume.
  expect_encoding("Café naïve résumé", {"[CLS]", "cafe", "naive", "resume", "[SEP]"},
                  {101, 7668, 15743, 13746, 102});
  // Decomposed input (e + U+0301) gives the same word.
  expect_encoding("cafe\u0301", {"[CLS]", "cafe", "[SEP]"}, {101, 7668, 102});
  // U+0130 lower-cases to "i" + U+0307 (full mapping); the dot is Mn and is stripped.
  expect_encoding("İstanbul", {"[CLS]", "istanbul", "[SEP]"}, {101, 9960, 102});
  // Kana voicing marks decompose to Mn as well: が -> か. Hangul syllables decompose into jamo.
  expect_encoding("ひらがな", {"[CLS]", "ひ", "##ら", "##か", "##な", "[SEP]"},
                  {101, 1673, 30211, 30177, 30193, 102});
  expect_encoding("한국어",
                  {"[CLS]", "ᄒ", "##ᅡ", "##ᆫ", "##ᄀ", "##ᅮ", "##ᆨ", "##ᄋ", "##ᅥ", "[SEP]"},
                  {101, 1469, 30006, 30021, 29991, 30014, 30020, 29999, 30008, 102});
}

TEST(Tokenizer, PunctuationSplits) {
  // Every punctuation character is its own word; "..." is three.
  expect_encoding("don't stop-now...",
                  {"[CLS]", "don", "'", "t", "stop", "-", "now", ".", ".", ".", "[SEP]"},
                  {101, 2123, 1005, 1056, 2644, 1011, 2085, 1012, 1012, 1012, 102});
}

TEST(Tokenizer, ChineseCharactersAreWords) {
  // Spaces go around each CJK ideograph; 爱 is not in this vocab, so it alone becomes [UNK].
  expect_encoding("我爱Paris", {"[CLS]", "我", "[UNK]", "paris", "[SEP]"}, {101, 1855, 100, 3000, 102});
  // U+20000 is in HF's extension-B range: split off (then [UNK]) rather than glued to "x".
  expect_encoding("\U00020000x", {"[CLS]", "[UNK]", "x", "[SEP]"}, {101, 100, 1060, 102});
}

TEST(Tokenizer, Numbers) {
  // "$" and "." are ASCII punctuation; "2024" is not a vocab word: 202 + ##4.
  expect_encoding("It costs $3.50 in 2024",
                  {"[CLS]", "it", "costs", "$", "3", ".", "50", "in", "202", "##4", "[SEP]"},
                  {101, 2009, 5366, 1002, 1017, 1012, 2753, 1999, 16798, 2549, 102});
}

TEST(Tokenizer, UnknownWords) {
  // A word longer than max_input_chars_per_word (100 code points) is [UNK] without looking it up.
  expect_encoding(std::string(101, 'a'), {"[CLS]", "[UNK]", "[SEP]"}, {101, 100, 102});
  const Encoding hundred = bert().encode(std::string(100, 'a'), 512);
  EXPECT_EQ(hundred.tokens[1], "aaa");  // exactly 100 is still split into pieces
  EXPECT_EQ(hundred.tokens.size(), 52u);  // aaa, 48 x ##aa, ##a
  // ☃ is in no vocab entry, so the whole word it sits in is [UNK], not just the character.
  expect_encoding("a☃b", {"[CLS]", "[UNK]", "[SEP]"}, {101, 100, 102});
  expect_encoding("snow ☃ man", {"[CLS]", "snow", "[UNK]", "man", "[SEP]"}, {101, 4586, 100, 2158, 102});
  expect_encoding("I \U0001F600 it", {"[CLS]", "i", "[UNK]", "it", "[SEP]"}, {101, 1045, 100, 2009, 102});
}

TEST(Tokenizer, ControlCharactersAndWhitespace) {
  // _clean_text drops NUL, U+FFFD and category C (U+0001, U+007F, U+200B), which joins their
  // neighbours ("ab", "ef", "ghij"); \t \n \r and U+00A0 become spaces.
  expect_encoding("a\x01" "b\u00A0c\td\ne\u200Bf\r\ng\0h\uFFFDi\x7F" "j"s,
                  {"[CLS]", "ab", "c", "d", "e", "##f", "g", "##hi", "##j", "[SEP]"},
                  {101, 11113, 1039, 1040, 1041, 2546, 1043, 4048, 3501, 102});
  // U+2003 and U+3000 are Zs; U+2028 (Zl) is not HF whitespace, but str.split() splits on it.
  expect_encoding("a\u2028b\u3000c\u2003d", {"[CLS]", "a", "b", "c", "d", "[SEP]"},
                  {101, 1037, 1038, 1039, 1040, 102});
}

TEST(Tokenizer, GreekUpperCase) {
  // PreTrainedTokenizer.tokenize lower-cases one character at a time before BasicTokenizer runs, so
  // the final-sigma rule never applies: "ΟΔΟΣ" -> "οδοσ" (ο ##δ ##ο ##σ), while typed-in lower case
  // "οδος" keeps its ς and matches the piece ##ος.
  expect_encoding("ΟΔΟΣ", {"[CLS]", "ο", "##δ", "##ο", "##σ", "[SEP]"}, {101, 1169, 29722, 29730, 29733, 102});
  expect_encoding("οδος", {"[CLS]", "ο", "##δ", "##ος", "[SEP]"}, {101, 1169, 29722, 15297, 102});
}

TEST(Tokenizer, SpecialTokensInText) {
  // Literal special tokens are cut out before anything else (tokens_trie.split), even inside a word;
  // a lower-case "[cls]" is ordinary text.
  expect_encoding("hello[SEP]world [cls]",
                  {"[CLS]", "hello", "[SEP]", "world", "[", "cl", "##s", "]", "[SEP]"},
                  {101, 7592, 102, 2088, 1031, 18856, 2015, 1033, 102});
}

// ---------------------------------------------------------------- BertTokenizer errors

TEST(Tokenizer, TooManyTokens) {
  std::string text;
  for (int i = 0; i < 598; ++i) text += "a ";
  EXPECT_EQ(tokenizer_error([&] { bert().encode(text, 512); }),
            "sentence has 600 tokens, more than max_position_embeddings 512");
  EXPECT_EQ(bert().encode(text, 600).ids.size(), 600u);  // the limit itself is allowed
}

TEST(Tokenizer, InvalidUtf8) {
  EXPECT_EQ(tokenizer_error([] { bert().encode("ab\xFF", 512); }), "invalid UTF-8 at byte 2");
  EXPECT_EQ(tokenizer_error([] { bert().encode("x\xC0\xAF", 512); }), "invalid UTF-8 at byte 1");  // overlong
  EXPECT_EQ(tokenizer_error([] { bert().encode("\xED\xA0\x80", 512); }), "invalid UTF-8 at byte 0");  // surrogate
  EXPECT_EQ(tokenizer_error([] { bert().encode("caf\xC3", 512); }), "invalid UTF-8 at byte 3");  // truncated
}

TEST(Tokenizer, EmptySentence) {
  EXPECT_EQ(tokenizer_error([] { bert().encode("", 512); }), "empty sentence");
  EXPECT_EQ(tokenizer_error([] { bert().encode(" \t\n\u00A0", 512); }), "empty sentence");
  EXPECT_EQ(tokenizer_error([] { bert().encode("\x01\u200B", 512); }), "empty sentence");
}

TEST(Tokenizer, WordpieceDirect) {
  EXPECT_EQ(bert().wordpiece("unaffable"), (Tokens{"una", "##ffa", "##ble"}));
  EXPECT_EQ(bert().wordpiece("a☃"), (Tokens{"[UNK]"}));
  EXPECT_TRUE(bert().wordpiece("").empty());
}

}  // namespace
}  // namespace lenscheck
