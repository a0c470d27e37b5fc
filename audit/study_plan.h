#pragma once
// A pre-registered study plan: the hypothesis, the lenses, the row rule and the abandon criteria,
// written before the measurement. The audit records the plan's SHA-256 next to its verdict.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "instrument/instrument.h"
#include "runtime/lens.h"

namespace lenscheck {

enum class Stat {
  median_sink_share,
  worst_row_sink_share,
  rows_with_sink_above,        // needs threshold
  rows_worse_than_baseline,
  largest_relative_worsening,
  heads_kept_fraction,
  undefined_rows,              // rows with no weight at all under the lens: no sink share to show
  self_only_rows,              // rows with every weight on the word itself: no context to show (WordRow::self_only)
  median_context_sink_share,   // of WordRow::context_sink_share, over the rows that have a context
};
const char* stat_name(Stat stat);

struct AbandonCriterion {
  Lens lens;
  Stat stat;
  std::optional<double> threshold;  // for rows_with_sink_above
  std::optional<double> above, below;  // exactly one: abandon when the statistic is above / below it
  int line = 0;
  std::string describe() const;  // "value_norm worst_row_sink_share above 0.5"
};

struct StudyPlan {
  std::filesystem::path file;
  std::string study, registered, hypothesis;
  Lens baseline = Lens::attention;
  std::vector<Lens> lenses;  // the baseline first
  HeadRule head_rule;
  std::filesystem::path sentences, model;   // resolved against the plan's folder
  std::optional<std::filesystem::path> recorded;
  std::vector<AbandonCriterion> abandon_if;
};

StudyPlan load_study_plan(const std::filesystem::path& file);

// The instrument as the plan registers it (its lenses and head rule), printed as the display file beside
// it says (instrument/display_spec.h); an InputError naming that file when it is missing or malformed.
Instrument instrument_of(const StudyPlan& plan);

// Numbers a past audit showed, which a port must re-derive before it is used for a new conclusion.
struct RecordedNumber {
  std::string sentence, word;
  int at = -1;  // the word's index in the sentence; -1: the only word with that text
  Lens lens = Lens::attention;
  std::optional<std::string> head;  // "L.H", when the record names the head it was read from
  std::string target;
  std::optional<double> displayed, sink_share, raw_share;
  double tolerance = 0;
  int line = 0;
};

struct RecordedNumbers {
  std::filesystem::path file;
  std::string source;
  std::vector<RecordedNumber> numbers;
};

RecordedNumbers load_recorded_numbers(const std::filesystem::path& file);

}  // namespace lenscheck
