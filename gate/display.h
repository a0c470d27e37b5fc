#pragma once
// The display verdict: what the instrument shows, computed from the candidate and from the fp64 truth,
// row by row. For every word of every sentence and every lens of the study plan: the head the plan's
// rule opens, its top targets and their displayed weights, the sink share, and a disclosure flag at each
// threshold, printed as the plan's `display:` says (audit/study_plan.h).
//
// A row is wrong when the candidate prints something else where the truth is decided; undecidable when
// the truth lies within the declared arithmetic's own error of a boundary (a rounding boundary of a
// printed number, a flag's threshold; twice it for a tie between two heads or two targets, whose two
// sides both carry it), whatever the candidate prints there. That error is measured, not assumed: for
// each quantity, the largest distance from the truth of the benchmark and its rounding probes
// (gate/verify.h), libtorch computing in the arithmetic the candidate declares. It is the format's own
// error, not the k times it that the tensor gate allows: the display verdict asks whether a reader sees
// a number the declared arithmetic itself would not have printed, a stricter question than the tensor
// gate's. A candidate whose row cannot be read (a lens tensor missing, misshaped or not finite) is
// wrong there.
#include <string>
#include <vector>

#include "audit/study_plan.h"
#include "model/trace.h"
#include "runtime/lens.h"

namespace lenscheck {

// One printed item of a row on which candidate and truth differ, or on which the truth is close to a
// boundary.
struct DisplayItem {
  std::string what;       // "head", "target 2", "weight of doctor", "sink share", "flag 50 %"
  std::string candidate;  // as printed: "2.1", "doctor", "0.43", "raised"
  std::string truth;
  bool differs = false;
  bool decidable = true;  // the truth is farther than `error` from the item's boundary
  double margin = 0;      // the truth's distance from that boundary
  double error = 0;       // the declared arithmetic's error in the quantity
};

struct DisplayRow {
  std::string sentence, word;
  int at = 0;  // the word's index in the sentence
  Lens lens = Lens::attention;
  std::vector<DisplayItem> items;  // the differing and the undecidable ones; empty when the row agrees
  bool wrong() const;              // some item differs where the truth is decided
  bool undecidable() const;        // not wrong, and some item's truth is within the error of its boundary
  bool differs() const;            // some item prints differently
};

struct DisplayVerdict {
  std::filesystem::path plan_file;
  DisplaySpec spec;
  HeadRule head_rule;
  std::vector<Lens> lenses;
  size_t rows = 0;                // every row compared, over sentences, words and lenses
  std::vector<DisplayRow> flagged;  // the rows that are wrong or undecidable, in sentence order
  size_t wrong() const;
  size_t undecidable() const;
  size_t undecidable_differing() const;
  bool pass() const { return rows > 0 && wrong() == 0; }
  // "0 of 140 rows show a different number; 2 undecidable at int8 (1 at the 50 % flag, 1 a head tie)"
  std::string headline(const std::string& arithmetic) const;
};

// The plan's display: block; an InputError naming the plan when it has none.
const DisplaySpec& required_display(const StudyPlan& plan);

// The rows of one sentence: `benchmarks` are the benchmark and its probes. Every trace holds the lens
// tensors of every layer (Record::instrument or more) for the same tokens and word ids.
std::vector<DisplayRow> compare_display(const StudyPlan& plan, const std::string& sentence, const Trace& candidate,
                                        const Trace& truth, const std::vector<const Trace*>& benchmarks, int layers,
                                        int heads, size_t& rows);

// Gathers the sentences' rows into the verdict.
DisplayVerdict display_verdict(const StudyPlan& plan, std::vector<std::vector<DisplayRow>> per_sentence, size_t rows);

// Markdown section and JSON of the verdict, for the verify reports.
std::string display_markdown(const DisplayVerdict& verdict, const std::string& arithmetic);

}  // namespace lenscheck
