#pragma once
// `lenscheck audit`: the pre-registered study of whether norm-weighted attention removes the
// [CLS]/[SEP] sink from the rows the instrument shows, with a verdict the plan fixed beforehand.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/sentences.h"
#include "audit/study_plan.h"
#include "model/checkpoint.h"
#include "instrument/rows.h"

namespace lenscheck {

struct AuditRow {
  std::string sentence;  // id
  int word = 0;
  std::vector<std::string> words;  // the sentence's words, for naming targets
  std::vector<WordRow> by_lens;    // in plan.lenses order
  size_t ordinal = 0;              // the sentence's position in the corpus (0-based, blank lines not counted)
  const std::string& word_text() const { return words.at(size_t(word)); }
};

// A row's place in the corpus, for "the first row that has it" across shards.
struct RowKey {
  size_t sentence = 0;
  int word = 0;
  auto operator<=>(const RowKey&) const = default;
};

// The largest value a statistic takes over the rows, and the first row (in corpus order) with it:
// what a single pass in corpus order finds, and what merging shards in any order finds too.
struct RowMax {
  double value = 0;
  std::string where;               // "sentence-id: word"; empty while no row counted
  RowKey at;
  double baseline = 0, share = 0;  // the row's sink share under the baseline lens and under this one
  void offer(double v, const AuditRow& row, double baseline_share, double lens_share);
  void merge(const RowMax& other);
};

// The reports print sink shares to 0.1 %: a share below one step of that is zero to the reader, so no
// relative change is taken from it, and a rise smaller than it is not reported as a visible one.
inline constexpr double kShareResolution = 0.001;

struct LensStats {
  Lens lens;
  size_t rows = 0, undefined = 0;  // undefined: rows that carry no weight at all
  size_t self_only = 0;            // rows with every weight on the word itself (WordRow::self_only)
  double median = 0;               // within Histogram::kShareWidth / 2 of the exact median
  RowMax worst;                    // of the sink share
  size_t above_50 = 0, above_90 = 0;
  size_t worse = 0;                // rows whose sink share rose against the baseline
  size_t worse_by_resolution = 0;  // of those, rows that rose by kShareResolution or more
  // (share − baseline) / baseline, over the rows whose baseline share is kShareResolution or more
  // (below it the baseline prints as 0.0 % and a relative figure is noise); and the rise in share
  // units (×100: percentage points) over every row, each with its row's baseline share.
  RowMax relative_worsening, points_worsening;
  // The sink's share of each row's context (WordRow::context_sink_share), over the rows that have one:
  // its median (within Histogram::kShareWidth / 2), largest, and the rows above 50 %.
  double context_median = 0;
  RowMax context_worst;
  size_t context_rows = 0, context_above_50 = 0;
  size_t kept_head = 0;            // rows that open the same head as under the baseline (its layer, for a
                                   // per-layer lens: HeadRef::same_place)
};

// ‖n‖ of [CLS] and of [SEP] over the mean ‖n‖ of the sentence's content tokens, for one head.
struct NormRatio {
  std::string sentence;
  HeadRef head;
  double cls_value, sep_value, cls_transformed, sep_transformed;
  size_t ordinal = 0;  // the sentence's, as in AuditRow
};

// Counts of values in buckets, mergeable exactly (counts add), whose median is read back within a
// stated bound. Sink shares live in [0, 1]: buckets of fixed width kShareWidth, so the median is
// within kShareWidth / 2 (0.005 percentage points). Norm ratios have no fixed range: logarithmic
// buckets [γ^i, γ^(i+1)) with γ = (1 + kRatioError) / (1 − kRatioError), read back as
// 2γ^(i+1) / (γ + 1), which is within kRatioError (0.1 %) of every value in the bucket
// (DDSketch; Masson et al., VLDB 2019). Ratios outside [1e-9, 1e9] fall into the end buckets;
// zero (or less) has a bucket of its own, read back as 0. A histogram holds at most 10 000 share
// buckets or 20 725 ratio buckets, whatever the number of values.
class Histogram {
 public:
  enum class Scale { share, ratio };
  static constexpr double kShareWidth = 1e-4, kRatioError = 1e-3;
  explicit Histogram(Scale scale) : scale_(scale) {}
  void add(double x) { ++buckets_[bucket(x)]; }
  void merge(const Histogram& other);
  uint64_t count() const;
  double median() const;  // 0 when empty
  const std::map<int64_t, uint64_t>& buckets() const { return buckets_; }
  void set(int64_t bucket, uint64_t count);  // reading a partial back; throws std::out_of_range

 private:
  int64_t bucket(double x) const;
  double value_of(int64_t bucket) const;
  Scale scale_;
  std::map<int64_t, uint64_t> buckets_;
};

// Kobayashi et al. 2021's mixing ratios of one layer over every content token (not [CLS] or [SEP]): the share
// of the token's update its other tokens carry, by attention alone (Attn-N), with its own residual (AttnRes-N)
// and through the LayerNorm (AttnResLn-N). Kept where the plan shows the residual_layernorm lens.
struct LayerMixing {
  Histogram attention{Histogram::Scale::share}, residual{Histogram::Scale::share},
      residual_layernorm{Histogram::Scale::share};
  void add(double attention_ratio, double residual_ratio, double residual_layernorm_ratio);  // finite, in [0, 1]
  void merge(const LayerMixing& other);
};

struct RatioSummary {
  double median = 0;
  size_t below_one = 0, count = 0;
};

// A norm ratio over sentence × head pairs: one of the four over every layer, or one layer's (LayerDepth).
struct RatioTally {
  Histogram values{Histogram::Scale::ratio};
  size_t below_one = 0;
  void add(double x);
  void merge(const RatioTally& other);
  RatioSummary summary() const;
};

// One layer over every head, not only the one the instrument opens: [CLS]'s and [SEP]'s value-norm ratios
// (NormRatio's, over sentence × head) and the sink share of every head's word row under each lens of the
// plan (over sentence × head × word row; under a per-layer lens, its one row a layer: sentence × word row).
// Histograms and counts, so that shards merge exactly and memory does not grow with the corpus.
struct LayerDepth {
  explicit LayerDepth(size_t lenses) : shares(lenses, Histogram(Histogram::Scale::share)), undefined(lenses, 0) {}
  RatioTally cls_value, sep_value;
  std::vector<Histogram> shares;  // plan.lenses order: the defined sink shares
  std::vector<size_t> undefined;  // plan.lenses order: rows that carry no weight at all
  void add(size_t lens, const WordRow& row);
  void merge(const LayerDepth& other);
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
  // The rows of the first AuditOptions::shown_sentences sentences, for the report; the statistics,
  // criteria and ratio summaries count every row of every sentence.
  std::vector<AuditRow> rows;
  size_t total_rows = 0;
  std::vector<LensStats> stats;  // plan.lenses order
  std::vector<Histogram> shares;  // plan.lenses order: every row's defined sink share, for the picture
  std::vector<Histogram> context_shares;  // plan.lenses order: every row's context sink share
  // Rows above each sink-share threshold the plan names (AuditTally::thresholds, the criteria's).
  struct ThresholdCount {
    size_t lens = 0;
    double threshold = 0;
    size_t rows = 0;
  };
  std::vector<ThresholdCount> share_thresholds;
  std::vector<NormRatio> ratios;  // of the shown sentences
  std::vector<LayerMixing> mixing;  // per layer; empty unless the plan shows residual_layernorm
  std::vector<LayerDepth> depth;    // per layer
  RatioSummary cls_value, sep_value, cls_transformed, sep_transformed;
  std::vector<CriterionResult> criteria;
  std::vector<RecordedCheck> recorded;
  bool abandon() const;
  bool recorded_hold() const;
};

// Folds rows and ratios into the statistics the verdict reads, in bounded size: counts, maxima,
// histograms; no row. Tallies of disjoint sets of sentences merge into the tally of their union,
// exactly, whatever the order.
struct AuditTally {
  // The rows above a criterion's sink-share threshold, counted as they come: rows_with_sink_above's
  // threshold, and the bound of worst_row_sink_share and median_sink_share (for the picture).
  using ThresholdCount = AuditResult::ThresholdCount;
  explicit AuditTally(const StudyPlan& plan);
  void add(const AuditRow& row);
  void add(const NormRatio& ratio);                  // pooled, and into its layer's depth
  void add(const std::vector<LayerMixing>& mixing);  // per layer, one sentence's
  void add(const std::vector<LayerDepth>& depth);    // per layer, one sentence's head rows
  void merge(const AuditTally& other);           // of the same plan
  void finish(AuditResult& result) const;        // stats, ratio summaries, criteria of result.plan

  std::vector<LensStats> stats;                  // plan.lenses order
  std::vector<Histogram> shares;                 // per lens, the defined sink shares
  std::vector<Histogram> context_shares;         // per lens, the context sink shares
  std::vector<std::optional<ThresholdCount>> thresholds;  // per plan criterion
  RatioTally cls_value, sep_value, cls_transformed, sep_transformed;
  std::vector<LayerMixing> mixing;               // per layer, as AuditResult::mixing
  std::vector<LayerDepth> depth;                 // per layer, as AuditResult::depth

 private:
  LayerDepth& depth_of(size_t layer);            // grown to hold `layer`
};

// Sentences done so far and in all, after each batch.
using AuditProgress = std::function<void(size_t done, size_t total)>;

// One shard of an audit: the sentences whose position i in the corpus (0-based, blank lines not
// counted) has i mod count = index. Round robin, so that shards stay even where sentence length
// drifts along the corpus, and no shard needs to know the corpus length first.
struct AuditShard {
  size_t index = 0, count = 1;
  bool owns(size_t ordinal) const { return ordinal % count == index; }
  std::string label() const { return std::to_string(index) + "/" + std::to_string(count); }
  static AuditShard parse(const std::string& text);  // "K/N"; throws InputError naming --shard
};

// What one shard contributes: everything the report, statistics and criteria need, in bounded size
// whatever the corpus length (the tally; the rows of the shown sentences and of the sentences the
// recorded numbers name), with the hashes that say what it was computed from.
struct AuditPartial {
  explicit AuditPartial(const StudyPlan& plan) : tally(plan) {}
  std::filesystem::path file;  // where it was read from; empty in memory
  AuditShard shard;
  std::string plan_sha256, model_sha256, sentences_sha256, recorded_sha256, build_sha256, version;
  std::string model_dir, model_generator;
  size_t corpus_sentences = 0;  // in the whole corpus
  size_t sentences = 0;         // this shard's
  AuditTally tally;
  std::vector<AuditRow> shown_rows, named_rows;
  std::vector<NormRatio> shown_ratios;
};

// How an audit runs. Threads, progress and the shown sentences change no statistic, criterion or verdict;
// a row edit is the seam of `lenscheck mutate`'s row faults.
struct AuditOptions {
  unsigned threads = 1;
  RowEdit row_edit = {};
  AuditProgress progress = {};
  // The report shows the rows of the corpus's first sentences, this many (every row counts in the
  // statistics). A parameter so that tests reach a corpus longer than it with a few sentences.
  size_t shown_sentences = 200;
};

// Streams the shard's sentences through the runtime a batch at a time, so memory stays flat in the
// number of sentences.
AuditPartial audit_shard(const StudyPlan& plan, const Checkpoint& checkpoint, AuditShard shard,
                         const AuditOptions& options = {});

// Merges the partials of every shard, one at a time, into the result a single run gives: it holds
// the merged tally and the shown rows, never a partial once added, so memory does not grow with the
// number of shards. add() throws InputError naming the partial when it belongs to another plan,
// model, corpus, set of recorded numbers or build, or repeats a shard; finish() when one is missing.
class AuditMerge {
 public:
  explicit AuditMerge(const StudyPlan& plan);
  void add(AuditPartial partial);
  AuditResult finish();

 private:
  StudyPlan plan_;
  std::string plan_sha256_;
  AuditPartial first_;                       // the first partial's hashes, to check the others against
  std::map<size_t, std::string> seen_;       // shard index → the partial that held it
  AuditTally tally_;
  AuditResult result_;                       // sentences, shown rows and ratios so far
  std::vector<AuditRow> named_rows_;
};

// An AuditMerge of `partials`, in the order given.
AuditResult merge_audit(const StudyPlan& plan, std::vector<AuditPartial> partials);

// The whole plan as one shard: merge_audit of audit_shard 0/1.
AuditResult run_audit(const StudyPlan& plan, const Checkpoint& checkpoint, const AuditOptions& options = {});

// The verdict logic alone, over rows already in result.rows (tests feed hand-made rows).
void summarise_audit(AuditResult& result);

}  // namespace lenscheck
