#pragma once
// What the instrument prints of a row: the `top_targets` heaviest content words with their displayed
// weights, and the sink share, each to `decimals` decimals (of a fraction: 2 prints 0.43), and a
// disclosure flag wherever the sink share exceeds a threshold (strictly above it: the audit counts the
// rows above a threshold and the registered plans read "more than half", so flag and count are one rule).
// Where the file says `head_scores: printed`, the head (or layer) the plan's rule opens is decided on the
// rule's scores as printed at `decimals` too: scores that print alike tie, and the rule's tie-break (the
// lowest layer, then head) decides; `exact`, the default, compares them as computed.
// It lives in its own file beside a study plan (plan.yaml → plan.display.yaml): the instrument's printing
// is not part of what a study registers.
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "instrument/rows.h"

namespace lenscheck {

struct DisplaySpec {
  int decimals = 0;
  int top_targets = 0;
  std::vector<double> sink_flags;  // ascending, each in (0, 1)
  bool head_on_printed_scores = false;  // head_scores: printed
  // The decimals the head rule's scores compare at; none: as computed.
  std::optional<int> head_decimals() const { return head_on_printed_scores ? std::optional<int>(decimals) : std::nullopt; }
};

// Reads a display file (keys decimals, top_targets, sink_flags, head_scores); an InputError naming it otherwise.
DisplaySpec load_display_spec(const std::filesystem::path& file);
// The display file beside a study plan: "studies/x.yaml" → "studies/x.display.yaml".
std::filesystem::path display_file_beside(const std::filesystem::path& plan_file);

// The content words a row can show: every word but the query word itself, unless it is the only one.
std::vector<int> content_words(size_t words, int word);

// What one head's row prints, its head aside: the heaviest content words with their printed weights,
// ranked by printed weight and equal printed weights by position in the sentence (so that two words both
// printed 0.00 show one thing, whichever is heavier underneath), the sink share, and each flag.
struct PrintedRow {
  std::vector<std::pair<int, std::string>> targets;  // word, printed weight
  std::string sink = "—";                           // undefined: the row carries no weight
  std::vector<bool> flags;
  bool operator==(const PrintedRow&) const = default;
};
PrintedRow printed_row(const WordRow& row, int word, const DisplaySpec& spec);

}  // namespace lenscheck
