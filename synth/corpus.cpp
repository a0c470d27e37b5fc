#include "synth/corpus.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <fstream>
#include <set>
#include <vector>

#include "model/error.h"
#include "model/seeded_rng.h"

namespace lenscheck {

namespace {

// Words the instrument's users write about; several split into WordPiece subwords.
constexpr std::array kNouns = {"nurse", "doctor", "teacher", "child", "engineer", "river", "city",
                               "scissors", "letter", "committee", "orchestra", "hypothesis",
                               "microscope", "farmer", "translator", "neighbourhood", "archive", "storm"};
constexpr std::array kAdjectives = {"old", "young", "quiet", "careful", "unbelievably tired", "bright",
                                    "distant", "reluctant", "famous", "small", "overcrowded"};
constexpr std::array kVerbs = {"handed", "saw", "thanked", "followed", "described", "repaired",
                               "ignored", "photographed", "reassured", "misunderstood"};
constexpr std::array kPrepositions = {"near", "behind", "after", "with", "without", "beside"};
constexpr std::array kAdverbs = {"quickly", "yesterday", "again", "silently", "eventually"};

template <size_t N>
const char* pick(SeededRng& rng, const std::array<const char*, N>& words) {
  return words[rng.next() % N];
}

std::string noun_phrase(SeededRng& rng) {
  std::string s = rng.next() % 2 ? "the" : "a";
  if (rng.next() % 2) s += fmt::format(" {}", pick(rng, kAdjectives));
  return s + " " + pick(rng, kNouns);
}

}  // namespace

std::string generated_sentence(uint64_t seed, uint64_t index) {
  SeededRng rng(seed * 0x9e3779b97f4a7c15ULL + index);
  std::string s = noun_phrase(rng) + " " + pick(rng, kVerbs) + " " + noun_phrase(rng);
  for (uint64_t extra = rng.next() % 4; extra > 0; --extra)
    s += fmt::format(" {} {}", pick(rng, kPrepositions), noun_phrase(rng));
  if (rng.next() % 3 == 0) s += fmt::format(" {}", pick(rng, kAdverbs));
  s[0] = static_cast<char>(s[0] - 'a' + 'A');
  return s + (rng.next() % 5 == 0 ? "!" : ".");
}

void write_corpus(const std::filesystem::path& out, size_t sentences, uint64_t seed) {
  std::ofstream f(out);
  if (!f) throw InputError(out, "cannot be written");
  for (size_t i = 0; i < sentences; ++i) f << generated_sentence(seed, i) << '\n';
  if (!f.flush()) throw InputError(out, "write failed");
}

namespace {

// Abbreviations after which a point does not end a sentence: they precede a name, a number or a
// reference (lower case, without the point).
const std::set<std::string, std::less<>> kLeadingAbbreviations = {
    "mr",   "mrs",  "ms",  "messrs", "mme", "dr",  "prof", "rev", "hon", "st",  "sr",   "jr",  "gen",
    "col",  "capt", "cpt", "lt",     "sgt", "maj", "adm",  "gov", "sen", "rep", "pres", "no",  "nos",
    "vol",  "vols", "art", "sec",    "ch",  "pp",  "p",    "fig", "cf",  "vs",  "viz",  "approx"};

// The quotes and brackets that open or close a sentence, ASCII and typographic (UTF-8).
constexpr std::array<std::string_view, 4> kOpeners = {"\"", "(", "\u201c", "\u2018"};
constexpr std::array<std::string_view, 6> kClosers = {"\"", "'", ")", "]", "\u201d", "\u2019"};

template <size_t N>
size_t match_at(std::string_view text, size_t at, const std::array<std::string_view, N>& marks) {
  for (std::string_view mark : marks)
    if (text.substr(at, mark.size()) == mark) return mark.size();
  return 0;
}

bool is_terminal(char c) { return c == '.' || c == '!' || c == '?'; }
bool is_capital(char c) { return c >= 'A' && c <= 'Z'; }

bool is_letter(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }

// Whether the word that ends with the point at `dot` (its letters and points, back to anything
// else: a space, a dash, a quote) keeps the sentence going: an initial, dotted initials, or a leading
// abbreviation. "I" is a pronoun ("said I."), never taken for an initial.
bool abbreviation_before(std::string_view text, size_t dot) {
  size_t start = dot;
  while (start > 0 && (is_letter(text[start - 1]) || text[start - 1] == '.')) --start;
  const std::string_view word = text.substr(start, dot - start);
  // A point after a digit ends an ordinal or a number (the 3d.), never an abbreviation.
  if (word.empty() || word.front() == '.' || (start > 0 && std::isdigit(static_cast<unsigned char>(text[start - 1]))))
    return false;
  if (word.size() == 1) return word != "I";                    // an initial
  if (word.find('.') != std::string_view::npos) return true;  // dotted initials: U.S, e.g, i.e
  std::string lower(word);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return kLeadingAbbreviations.count(lower) > 0;
}

// Whether a new sentence starts at `at`: a capital letter, after any opening quotes and brackets.
bool sentence_starts_at(std::string_view text, size_t at) {
  while (at < text.size())
    if (const size_t n = match_at(text, at, kOpeners)) at += n;
    else break;
  return at < text.size() && is_capital(text[at]);
}

std::string collapsed_whitespace(std::string_view text) {
  std::string s;
  for (char c : text) {
    const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
    if (!space) s += c;
    else if (!s.empty() && s.back() != ' ') s += ' ';
  }
  if (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

size_t word_count(std::string_view sentence) { return size_t(std::count(sentence.begin(), sentence.end(), ' ')) + 1; }

}  // namespace

std::vector<std::string> split_sentences(std::string_view paragraph) {
  const std::string text = collapsed_whitespace(paragraph);
  std::vector<std::string> sentences;
  size_t start = 0;
  for (size_t i = 0; i < text.size();) {
    if (!is_terminal(text[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && is_terminal(text[end])) ++end;
    const bool single_point = end == i + 1 && text[i] == '.';
    while (end < text.size())
      if (const size_t n = match_at(text, end, kClosers)) end += n;
      else break;
    const bool at_end = end == text.size();
    const bool ends = at_end || (text[end] == ' ' && sentence_starts_at(text, end + 1) &&
                                 !(single_point && abbreviation_before(text, i)));
    if (ends) {
      sentences.push_back(text.substr(start, end - start));
      start = end + 1;
    }
    i = end;
  }
  if (start < text.size()) sentences.push_back(text.substr(start));
  return sentences;
}

TextCorpus write_corpus_from_text(const std::vector<std::filesystem::path>& texts, const std::filesystem::path& out,
                                  size_t max_words) {
  std::ofstream f(out);
  if (!f) throw InputError(out, "cannot be written");
  TextCorpus corpus;
  for (const std::filesystem::path& file : texts) {
    std::ifstream in(file);
    if (!in || std::filesystem::is_directory(file)) throw InputError(file, "cannot be read as a text file");
    std::string paragraph, line;
    auto flush = [&] {
      for (const std::string& sentence : split_sentences(paragraph)) {
        if (word_count(sentence) > max_words) ++corpus.too_long;
        else {
          f << sentence << '\n';
          ++corpus.sentences;
        }
      }
      paragraph.clear();
    };
    while (std::getline(in, line)) {
      if (line.find_first_not_of(" \t\r\f\v") == std::string::npos) flush();
      else paragraph += line + '\n';
    }
    if (in.bad()) throw InputError(file, "read failed");
    flush();
  }
  if (!f.flush()) throw InputError(out, "write failed");
  if (corpus.sentences == 0)
    throw InputError(texts.empty() ? out : texts.front(),
                     fmt::format("holds no sentence of at most {} words{}", max_words, texts.size() > 1 ? " (nor do the other texts)" : ""));
  return corpus;
}

}  // namespace lenscheck
