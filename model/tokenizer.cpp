// A port of Hugging Face transformers' slow BertTokenizer (tokenization_bert.py and
// PreTrainedTokenizer.tokenize in tokenization_utils.py). The HF function each helper mirrors is named
// in its comment; Python's unicodedata is replaced by ICU.
#include "model/tokenizer.h"

#include <fmt/format.h>
#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/utf16.h>
#include <unicode/utf8.h>

#include <array>
#include <climits>

namespace lenscheck {
namespace {

// BertTokenizer.all_special_tokens: never split, never lower-cased.
constexpr std::array<std::string_view, 5> kSpecialTokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]",
                                                            "[MASK]"};

bool is_special(std::string_view token) {
  for (auto s : kSpecialTokens)
    if (token == s) return true;
  return false;
}

bool in_category(UChar32 c, uint32_t mask) { return (U_GET_GC_MASK(c) & mask) != 0; }

// _is_whitespace: \t \n \r are controls to Unicode but count as whitespace.
bool is_whitespace(UChar32 c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || in_category(c, U_GC_ZS_MASK);
}

// _is_control: any category C* (Cc Cf Cs Co Cn), except the three whitespace controls.
bool is_control(UChar32 c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  return in_category(c, U_GC_C_MASK);
}

// _is_punctuation: all non-alphanumeric ASCII (so "$", "^", "`" too), plus category P*.
bool is_punctuation(UChar32 c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126))
    return true;
  return in_category(c, U_GC_P_MASK);
}

// BasicTokenizer._is_chinese_char: exactly HF's ranges (not all of CJK, no kana, no hangul).
bool is_chinese_char(UChar32 c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// Python's str.split() separators (Zs, or bidi class WS/B/S). That set is ICU's White_Space plus
// U+001C..U+001F, which _clean_text has already removed as controls.
bool splits_words(UChar32 c) { return u_isUWhiteSpace(c); }

template <class F>
void for_each_code_point(const icu::UnicodeString& s, F f) {
  for (int32_t i = 0; i < s.length();) {
    const UChar32 c = s.char32At(i);
    f(c);
    i += U16_LENGTH(c);
  }
}

icu::UnicodeString decode_utf8(std::string_view text) {
  if (text.size() > INT32_MAX) throw TokenizerError("sentence is longer than 2 GiB");
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  const auto n = static_cast<int32_t>(text.size());
  icu::UnicodeString out;
  for (int32_t i = 0; i < n;) {
    const int32_t start = i;
    UChar32 c;
    U8_NEXT(p, i, n, c);  // rejects overlong forms, surrogates and truncated sequences
    if (c < 0) throw TokenizerError(fmt::format("invalid UTF-8 at byte {}", start));
    out.append(c);
  }
  return out;
}

std::string to_utf8(const icu::UnicodeString& s) {
  std::string out;
  s.toUTF8String(out);
  return out;
}

icu::UnicodeString normalize(const icu::UnicodeString& s, bool compose) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n =
      compose ? icu::Normalizer2::getNFCInstance(status) : icu::Normalizer2::getNFDInstance(status);
  icu::UnicodeString out = U_SUCCESS(status) ? n->normalize(s, status) : icu::UnicodeString();
  if (U_FAILURE(status)) throw std::runtime_error(std::string("ICU normalisation: ") + u_errorName(status));
  return out;
}

// PreTrainedTokenizer.tokenize lower-cases the text with re.sub("(special)|(.+?)", ...), i.e. one
// character at a time, before BasicTokenizer sees it. So context rules never fire: "ΟΔΟΣ" becomes
// "οδοσ", not "οδος" (the fast tokenizer's per-char lowercase agrees).
icu::UnicodeString lower_each_char(const icu::UnicodeString& s) {
  icu::UnicodeString out;
  for_each_code_point(s, [&](UChar32 c) { out.append(icu::UnicodeString(c).toLower(icu::Locale::getRoot())); });
  return out;
}

// BasicTokenizer._run_strip_accents: NFD, then drop nonspacing marks (Mn).
icu::UnicodeString strip_accents(const icu::UnicodeString& s) {
  icu::UnicodeString out;
  for_each_code_point(normalize(s, false), [&](UChar32 c) {
    if (!in_category(c, U_GC_MN_MASK)) out.append(c);
  });
  return out;
}

// BasicTokenizer._run_split_on_punc followed by whitespace_tokenize(" ".join(...)): every punctuation
// character is a word of its own; whitespace separates words and is dropped.
void split_on_punctuation(const icu::UnicodeString& token, std::vector<std::string>& words) {
  icu::UnicodeString word;
  auto flush = [&] {
    if (!word.isEmpty()) words.push_back(to_utf8(word));
    word.remove();
  };
  for_each_code_point(token, [&](UChar32 c) {
    if (splits_words(c)) {
      flush();
    } else if (is_punctuation(c)) {
      flush();
      words.push_back(to_utf8(icu::UnicodeString(c)));
    } else {
      word.append(c);
    }
  });
  flush();
}

// BasicTokenizer.tokenize(text, never_split=all_special_tokens) on a chunk without literal special
// tokens.
void basic_words(const icu::UnicodeString& text, const TokenizerSettings& settings, std::vector<std::string>& words) {
  // _clean_text and _tokenize_chinese_chars in one pass.
  icu::UnicodeString cleaned;
  for_each_code_point(text, [&](UChar32 c) {
    if (c == 0 || c == 0xFFFD || is_control(c)) return;
    if (is_whitespace(c)) {
      cleaned.append(u' ');
    } else if (settings.split_chinese_chars.value && is_chinese_char(c)) {
      cleaned.append(u' ').append(c).append(u' ');
    } else {
      cleaned.append(c);
    }
  });
  // HF normalises to NFC so that composed and decomposed spellings give the same words.
  const icu::UnicodeString nfc = normalize(cleaned, true);

  // whitespace_tokenize, then per token: lower(), strip accents, split on punctuation.
  icu::UnicodeString token;
  auto finish_token = [&] {
    if (token.isEmpty()) return;
    const std::string utf8 = to_utf8(token);
    if (is_special(utf8)) {
      words.push_back(utf8);
    } else {
      if (settings.lower_case.value) token.toLower(icu::Locale::getRoot());  // str.lower(): full, context-sensitive
      if (settings.strips_accents()) token = strip_accents(token);
      split_on_punctuation(token, words);
    }
    token.remove();
  };
  for_each_code_point(nfc, [&](UChar32 c) {
    if (splits_words(c)) {
      finish_token();
    } else {
      token.append(c);
    }
  });
  finish_token();
}

}  // namespace

BertTokenizer::BertTokenizer(const Vocab& vocab, TokenizerSettings settings)
    : vocab_(vocab), settings_(std::move(settings)) {}

std::vector<std::string> BertTokenizer::basic_tokenize(std::string_view text) const {
  icu::UnicodeString u = decode_utf8(text);
  // sentence-transformers lower-cases the whole text with str.lower() before the tokenizer sees it, so
  // a literal "[CLS]" is ordinary text by then.
  if (settings_.lower_whole_text.value) u.toLower(icu::Locale::getRoot());
  std::vector<std::string> words;
  // PreTrainedTokenizer.tokenize cuts literal special tokens out first (tokens_trie.split); none of
  // the five is a prefix of another, so the trie's longest match is simply the leftmost one.
  int32_t pos = 0;
  while (pos < u.length()) {
    int32_t at = u.length(), len = 0;
    for (auto s : kSpecialTokens) {
      const icu::UnicodeString special(s.data(), static_cast<int32_t>(s.size()), US_INV);
      const int32_t found = u.indexOf(special, pos);
      if (found >= 0 && found < at) at = found, len = special.length();
    }
    const icu::UnicodeString chunk(u, pos, at - pos);
    basic_words(settings_.lower_case.value ? lower_each_char(chunk) : chunk, settings_, words);
    if (len > 0) words.push_back(to_utf8(icu::UnicodeString(u, at, len)));
    pos = at + len;
  }
  return words;
}

std::vector<std::string> BertTokenizer::wordpiece(std::string_view word) const {
  // Byte offset of every code point: HF counts and slices in code points.
  std::vector<size_t> bounds;
  const auto* p = reinterpret_cast<const uint8_t*>(word.data());
  const auto n = static_cast<int64_t>(word.size());
  for (int64_t i = 0; i < n;) {
    bounds.push_back(static_cast<size_t>(i));
    UChar32 c;
    U8_NEXT(p, i, n, c);
    if (c < 0) throw TokenizerError(fmt::format("invalid UTF-8 at byte {}", bounds.back()));
  }
  const size_t chars = bounds.size();
  bounds.push_back(word.size());
  const std::string& unk = vocab_.token(vocab_.unk_id());
  if (chars > settings_.max_input_chars_per_word.value) return {unk};

  // Greedy longest-match-first; one position without any match makes the whole word [UNK].
  std::vector<std::string> pieces;
  for (size_t start = 0; start < chars;) {
    std::string piece;
    size_t end = chars;
    for (; end > start; --end) {
      piece = start > 0 ? "##" : "";
      piece.append(word.substr(bounds[start], bounds[end] - bounds[start]));
      if (vocab_.id(piece) >= 0) break;
    }
    if (end == start) return {unk};
    pieces.push_back(std::move(piece));
    start = end;
  }
  return pieces;
}

Encoding BertTokenizer::encode(std::string_view text, size_t max_position_embeddings) const {
  Encoding e;
  e.words = basic_tokenize(text);
  if (e.words.empty()) throw TokenizerError("empty sentence");
  auto add = [&](const std::string& token, int word) {
    e.ids.push_back(vocab_.id(token));
    e.tokens.push_back(token);
    e.word_ids.push_back(word);
  };
  add(vocab_.token(vocab_.cls_id()), -1);
  for (size_t w = 0; w < e.words.size(); ++w)
    for (const auto& piece : wordpiece(e.words[w])) add(piece, static_cast<int>(w));
  add(vocab_.token(vocab_.sep_id()), -1);
  const Setting<size_t>& limit = settings_.max_tokens;
  if (limit.value < max_position_embeddings && e.ids.size() > limit.value)
    throw TokenizerError(fmt::format("sentence has {} tokens, more than {} ({})", e.ids.size(), limit.value,
                                     limit.from));
  if (e.ids.size() > max_position_embeddings)
    throw TokenizerError(fmt::format("sentence has {} tokens, more than max_position_embeddings {}",
                                     e.ids.size(), max_position_embeddings));
  return e;
}

}  // namespace lenscheck
