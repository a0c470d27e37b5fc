// Corpora from English text: the sentence splitter on abbreviations, initials, numbers and quotes,
// and `make-corpus --from` as a user meets it.
#include <gtest/gtest.h>

#include "synth/corpus.h"
#include "tests/test_support.h"

using namespace lenscheck;

using Sentences = std::vector<std::string>;

TEST(SplitSentences, EndsAtPointsQuestionAndExclamationMarksBeforeACapital) {
  EXPECT_EQ(split_sentences("Call me Ishmael. Some years ago I went\nto sea!  Why?\tBecause."),
            (Sentences{"Call me Ishmael.", "Some years ago I went to sea!", "Why?", "Because."}));
  // A mark before a lower-case word, a dash or a digit ends nothing.
  EXPECT_EQ(split_sentences("But look! here come more. What do you see?—Posted like sentinels."),
            (Sentences{"But look! here come more.", "What do you see?—Posted like sentinels."}));
}

TEST(SplitSentences, AbbreviationsInitialsAndNumbersDoNotEndASentence) {
  EXPECT_EQ(split_sentences("Mr. Marcy met Dr. Kane at St. Louis on the 3d. Gen. Grant came."),
            (Sentences{"Mr. Marcy met Dr. Kane at St. Louis on the 3d.", "Gen. Grant came."}));
  EXPECT_EQ(split_sentences("J. Q. Adams wrote to the U.S. Senate. It cost $41.84, or 3.5 per cent. See No. 5."),
            (Sentences{"J. Q. Adams wrote to the U.S. Senate.", "It cost $41.84, or 3.5 per cent.", "See No. 5."}));
  // "I" is a pronoun, not an initial; an abbreviation after a dash is still one.
  EXPECT_EQ(split_sentences("\"Hands off,\" said I. Then the mate spoke—Mr. Starbuck. He left."),
            (Sentences{"\"Hands off,\" said I.", "Then the mate spoke—Mr. Starbuck.", "He left."}));
}

TEST(SplitSentences, ClosingQuotesStayWithTheirSentenceAndOpeningOnesWithTheNext) {
  EXPECT_EQ(split_sentences("He cried, \u201cWhale!\u201d \u201cWhere?\u201d asked Ahab. (It was noon.) Then \"Go.\" \"Now.\""),
            (Sentences{"He cried, \u201cWhale!\u201d", "\u201cWhere?\u201d asked Ahab.", "(It was noon.)", "Then \"Go.\"",
                       "\"Now.\""}));
  EXPECT_EQ(split_sentences("Wait... Then it ended?! Yes."), (Sentences{"Wait...", "Then it ended?!", "Yes."}));
}

TEST(MakeCorpus, FromTextWritesASentenceALineNeverAcrossAParagraphAndLeavesOutLongOnes) {
  const auto dir = test::temp_dir("from");
  test::write_file(dir / "a.txt", "CHAPTER 1. Loomings.\n\nCall me Ishmael. It was a damp\ndrizzly November\n\n"
                                  "and in my soul. Ye" + std::string(30, 's') + ".\n");
  test::write_file(dir / "b.txt", "One two three four five six seven eight nine ten eleven twelve. Short one.\n");
  const test::CommandResult r = test::run_cli("make-corpus --from " + test::quoted(dir / "a.txt") + " " +
                                              test::quoted(dir / "b.txt") + " --max-words 10 --out " +
                                              test::quoted(dir / "corpus.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(test::read_file(dir / "corpus.txt"),
            "CHAPTER 1.\nLoomings.\nCall me Ishmael.\nIt was a damp drizzly November\nand in my soul.\nYe"
            + std::string(30, 's') + ".\nShort one.\n");
  EXPECT_NE(r.output.find("7 sentences from 2 text files; 1 of more than 10 words left out"), std::string::npos)
      << r.output;
}

TEST(MakeCorpus, AMissingTextOrOneWithoutASentenceIsExit2NamingTheFile) {
  const auto dir = test::temp_dir("bad");
  const test::CommandResult missing =
      test::run_cli("make-corpus --from " + test::quoted(dir / "missing.txt") + " --out " + test::quoted(dir / "c.txt"));
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find((dir / "missing.txt").string() + ": cannot be read"), std::string::npos) << missing.output;
  test::write_file(dir / "blank.txt", "\n   \n\n");
  const test::CommandResult blank =
      test::run_cli("make-corpus --from " + test::quoted(dir / "blank.txt") + " --out " + test::quoted(dir / "c.txt"));
  EXPECT_EQ(blank.exit_code, 2) << blank.output;
  EXPECT_NE(blank.output.find((dir / "blank.txt").string() + ": holds no sentence"), std::string::npos) << blank.output;
  // Generated sentences and text are two corpora: asking for both is a usage error.
  const test::CommandResult both = test::run_cli("make-corpus --from " + test::quoted(dir / "blank.txt") +
                                                 " --sentences 5 --out " + test::quoted(dir / "c.txt"));
  EXPECT_NE(both.exit_code, 0) << both.output;
}
