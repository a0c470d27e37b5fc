#include "synth/corpus.h"

#include <fmt/format.h>

#include <array>
#include <fstream>
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

}  // namespace lenscheck
