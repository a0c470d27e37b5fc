#pragma once
// `lenscheck audit`: the pre-registered study of whether norm-weighted attention removes the
// [CLS]/[SEP] sink from the rows the instrument shows, with a verdict the plan fixed beforehand.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/sentences.h"
#include "harness/study_plan.h"
#include "model/checkpoint.h"
#include "runtime/rows.h"

namespace lenscheck {

struct AuditRow {
  std::string sentence;  // id
  int word = 0;
  std::vector<std::string> words;  // the sentence's words, for naming targets
  std::vector<WordRow> by_lens;    // in plan.lenses order
  const std::string& word_text() const { return words.at(size_t(word)); }
};

struct LensStats {
  Lens lens;
  size_t rows = 0, undefined = 0;  // undefined: rows that carry no weight at all
  double median = 0, worst = 0;
  std::string worst_where;         // "sentence-id: word"
  size_t above_50 = 0, above_90 = 0;
  size_t worse = 0;                // rows whose sink share rose against the baseline
  double largest_relative_worsening = 0;
  std::string largest_worsening_where;
  size_t kept_head = 0;            // rows that open the same head as under the baseline
};

// ‖n‖ of [CLS] and of [SEP] over the mean ‖n‖ of the sentence's content tokens, for one head.
struct NormRatio {
  std::string sentence;
  HeadRef head;
  double cls_value, sep_value, cls_transformed, sep_transformed;
};

struct RatioSummary {
  double median = 0;
  size_t below_one = 0, count = 0;
};

struct CriterionResult {
  AbandonCriterion criterion;
  double value = 0;
  bool triggered = false;
};

struct RecordedCheck {
  RecordedNumber number;
  std::optional<double> displayed, sink_share, raw_share;  // re-derived
  std::string head, target;                                // re-derived
  std::string problem;                                     // empty: within tolerance
};

struct AuditResult {
  StudyPlan plan;
  std::string plan_sha256, model_sha256, sentences_sha256, recorded_sha256, version;
  std::string model_dir, model_generator;
  size_t sentences = 0;
  // The rows of the first kShownSentences sentences, for the report; the statistics, criteria and
  // ratio summaries count every row of every sentence.
  std::vector<AuditRow> rows;
  size_t total_rows = 0;
  std::vector<LensStats> stats;  // plan.lenses order
  std::vector<NormRatio> ratios;  // of the shown sentences
  RatioSummary cls_value, sep_value, cls_transformed, sep_transformed;
  std::vector<CriterionResult> criteria;
  std::vector<RecordedCheck> recorded;
  bool abandon() const;
  bool recorded_hold() const;
};

inline constexpr size_t kShownSentences = 200;

// Folds rows and ratios, in sentence order, into the statistics the verdict reads; it keeps the
// sink shares and ratios (for exact medians and thresholds) but no row.
class AuditTally {
 public:
  explicit AuditTally(const StudyPlan& plan);
  void add(const AuditRow& row);
  void add(const NormRatio& ratio);
  void finish(AuditResult& result) const;  // stats, ratio summaries, criteria

 private:
  const StudyPlan& plan_;
  std::vector<LensStats> stats_;
  std::vector<std::vector<double>> shares_;  // per lens, the defined sink shares
  std::vector<double> cls_value_, sep_value_, cls_transformed_, sep_transformed_;
};

// Sentences done so far and in all, after each batch.
using AuditProgress = std::function<void(size_t done, size_t total)>;

// Streams the plan's sentences through the runtime a batch at a time, so memory stays flat in the
// number of sentences. `row_fault` is for `lenscheck mutate` only.
AuditResult run_audit(const StudyPlan& plan, const Checkpoint& checkpoint, unsigned threads = 1,
                      RowFault row_fault = RowFault::none, const AuditProgress& progress = {});

// The verdict logic alone, over rows already in result.rows (tests feed hand-made rows).
void summarise_audit(AuditResult& result);

}  // namespace lenscheck
