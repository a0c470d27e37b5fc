#pragma once
// The display verdict: what the instrument shows, computed from the candidate and from the fp64 truth,
// row by row. For every word of every sentence and every lens of the study plan: the head the plan's
// rule opens, its top targets and their displayed weights, the sink share, and a disclosure flag at each
// threshold, printed as the display file beside the plan says (instrument/instrument.h).
//
// A row prints differently when any printed item differs (equal printed weights are ranked by word
// position, so weights that print alike show one thing). Where it does, the difference is explained by the
// declared arithmetic when the truth lies within the arithmetic's own error of the boundary that decided
// it (a rounding boundary of a printed number, a flag's threshold; for the head, every head's rule score
// moved by it far enough to open another head that would print another row, and under the display file's
// `head_scores: printed` only across a rounding boundary of a printed score), and wrong otherwise: a wrong
// row fails the gate. An exact tie in the truth, or, under printed scores, scores that print alike, is
// decided by the head rule's tie-break, which the candidate must follow.
// A row is undecidable when its truth lies within that error of such a boundary, whatever the candidate
// prints. The error is measured, not assumed: for each quantity, the largest distance from the truth of
// the benchmark and its rounding probes (gate/verify.h), libtorch computing in the arithmetic the
// candidate declares, and for fp16 the same graph rounded at its other op boundaries (every op's output,
// or only where ONNX Runtime's casts are: a correct runtime may do either). It is the format's own error, not the k times it that the tensor gate allows. A
// candidate whose row cannot be read (a lens tensor missing, misshaped or not finite) is wrong there.
#include <string>
#include <vector>

#include "instrument/instrument.h"
#include "model/trace.h"
#include "runtime/lens.h"

namespace lenscheck {

// One printed item of a row on which candidate and truth differ, or on which the truth is close to a
// boundary.
struct DisplayItem {
  std::string what;       // "head", "weight of doctor@4", "sink share", "flag 50 %", "row", "displayed weights"
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
  bool differs() const;            // some item prints differently
  bool wrong() const;              // some item differs where the truth is decided
  bool explained() const;          // it differs, each differing item within the error of its boundary
  bool undecidable() const;        // some item's truth is within the error of its boundary
};

struct DisplayVerdict {
  Instrument instrument;
  size_t rows = 0;                // every row compared, over sentences, words and lenses
  std::vector<DisplayRow> flagged;  // the rows that differ or are undecidable, in sentence order
  size_t differing() const { return count(&DisplayRow::differs); }
  size_t wrong() const { return count(&DisplayRow::wrong); }
  size_t explained() const { return count(&DisplayRow::explained); }
  size_t undecidable() const { return count(&DisplayRow::undecidable); }
  bool pass() const { return rows > 0 && wrong() == 0; }
  // "215 of 420 rows print differently from fp64: 215 within int8's error, 0 beyond it; 230 undecidable
  // at int8 (items within its error of a boundary: 12 at the 50 % flag, 230 printed weights)"
  std::string headline(const std::string& arithmetic) const;

 private:
  size_t count(bool (DisplayRow::*kind)() const) const;
};

// The rows of one sentence: `benchmarks` are the benchmark and its probes. Every trace holds the lens
// tensors of every layer (Record::instrument or more; Record::instrument_residual for the residual lens)
// for the same tokens and word ids.
std::vector<DisplayRow> compare_display(const Instrument& instrument, const std::string& sentence, const Trace& candidate,
                                        const Trace& truth, const std::vector<const Trace*>& benchmarks, int layers,
                                        int heads, size_t& rows);

// Gathers the sentences' rows into the verdict.
DisplayVerdict display_verdict(const Instrument& instrument, std::vector<std::vector<DisplayRow>> per_sentence, size_t rows);

// Markdown section and JSON of the verdict, for the verify reports.
std::string display_markdown(const DisplayVerdict& verdict, const std::string& arithmetic);

}  // namespace lenscheck
