#include "harness/audit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "model/error.h"
#include "model/safetensors.h"
#include "model/sha256.h"
#include "harness/parallel.h"
#include "harness/verify.h"
#include "runtime/encoder.h"

namespace lenscheck {

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

RatioSummary summarise_ratios(const std::vector<double>& r) {
  RatioSummary s;
  s.median = median(r);
  s.count = r.size();
  s.below_one = static_cast<size_t>(std::count_if(r.begin(), r.end(), [](double x) { return x < 1.0; }));
  return s;
}

size_t lens_index(const StudyPlan& plan, Lens lens) {
  return static_cast<size_t>(std::find(plan.lenses.begin(), plan.lenses.end(), lens) - plan.lenses.begin());
}

std::string where(const AuditRow& row) { return fmt::format("{}: {}", row.sentence, row.word_text()); }

}  // namespace

bool AuditResult::abandon() const {
  return std::any_of(criteria.begin(), criteria.end(), [](const CriterionResult& c) { return c.triggered; });
}

bool AuditResult::recorded_hold() const {
  return std::all_of(recorded.begin(), recorded.end(), [](const RecordedCheck& c) { return c.problem.empty(); });
}

AuditTally::AuditTally(const StudyPlan& plan) : plan_(plan), shares_(plan.lenses.size()) {
  for (Lens lens : plan.lenses) {
    LensStats s;
    s.lens = lens;
    stats_.push_back(s);
  }
}

void AuditTally::add(const AuditRow& row) {
  const WordRow& base = row.by_lens[0];
  const auto base_share = base.sink_share();
  for (size_t li = 0; li < stats_.size(); ++li) {
    LensStats& s = stats_[li];
    ++s.rows;
    const WordRow& w = row.by_lens[li];
    if (w.head == base.head) ++s.kept_head;
    const auto share = w.sink_share();
    if (!share) {
      ++s.undefined;
      continue;
    }
    shares_[li].push_back(*share);
    if (*share > s.worst || s.worst_where.empty()) {
      s.worst = *share;
      s.worst_where = where(row);
    }
    s.above_50 += *share > 0.5;
    s.above_90 += *share > 0.9;
    if (li > 0 && base_share && *share > *base_share) {
      ++s.worse;
      const double relative = *base_share > 0 ? (*share - *base_share) / *base_share : INFINITY;
      if (relative > s.largest_relative_worsening) {
        s.largest_relative_worsening = relative;
        s.largest_worsening_where = where(row);
      }
    }
  }
}

void AuditTally::add(const NormRatio& n) {
  cls_value_.push_back(n.cls_value);
  sep_value_.push_back(n.sep_value);
  cls_transformed_.push_back(n.cls_transformed);
  sep_transformed_.push_back(n.sep_transformed);
}

void AuditTally::finish(AuditResult& r) const {
  r.stats = stats_;
  for (size_t li = 0; li < stats_.size(); ++li) r.stats[li].median = median(shares_[li]);
  r.total_rows = stats_.empty() ? 0 : stats_[0].rows;
  r.cls_value = summarise_ratios(cls_value_);
  r.sep_value = summarise_ratios(sep_value_);
  r.cls_transformed = summarise_ratios(cls_transformed_);
  r.sep_transformed = summarise_ratios(sep_transformed_);
  r.criteria.clear();
  for (const AbandonCriterion& c : plan_.abandon_if) {
    const size_t li = lens_index(plan_, c.lens);
    const LensStats& s = r.stats.at(li);
    double v = 0;
    switch (c.stat) {
      case Stat::median_sink_share: v = s.median; break;
      case Stat::worst_row_sink_share: v = s.worst; break;
      case Stat::rows_with_sink_above:
        v = static_cast<double>(std::count_if(shares_[li].begin(), shares_[li].end(),
                                              [&](double x) { return x > *c.threshold; }));
        break;
      case Stat::rows_worse_than_baseline: v = static_cast<double>(s.worse); break;
      case Stat::largest_relative_worsening: v = s.largest_relative_worsening; break;
      case Stat::heads_kept_fraction:
        v = s.rows ? static_cast<double>(s.kept_head) / static_cast<double>(s.rows) : 0;
        break;
    }
    r.criteria.push_back({c, v, c.above ? v > *c.above : v < *c.below});
  }
}

void summarise_audit(AuditResult& r) {
  AuditTally tally(r.plan);
  for (const AuditRow& row : r.rows) tally.add(row);
  for (const NormRatio& n : r.ratios) tally.add(n);
  tally.finish(r);
}

namespace {

// `rows`: every row of the sentences the recorded numbers name.
std::vector<RecordedCheck> check_recorded(const AuditResult& r, const std::vector<AuditRow>& rows,
                                          const RecordedNumbers& rec) {
  std::vector<RecordedCheck> out;
  for (const RecordedNumber& n : rec.numbers) {
    RecordedCheck c;
    c.number = n;
    const AuditRow* row = nullptr;
    int matches = 0;
    for (const AuditRow& candidate : rows)
      if (candidate.sentence == n.sentence && candidate.word_text() == n.word &&
          (n.at < 0 || candidate.word == n.at)) {
        row = &candidate;
        ++matches;
      }
    if (matches != 1) {
      c.problem = matches == 0 ? fmt::format("no row for word \"{}\"{} in sentence \"{}\"", n.word,
                                             n.at >= 0 ? fmt::format(" at {}", n.at) : "", n.sentence)
                               : fmt::format("word \"{}\" occurs {} times in \"{}\": give `at`", n.word,
                                             matches, n.sentence);
      out.push_back(c);
      continue;
    }
    if (std::find(r.plan.lenses.begin(), r.plan.lenses.end(), n.lens) == r.plan.lenses.end()) {
      c.problem = fmt::format("lens {} is not in the plan", lens_name(n.lens));
      out.push_back(c);
      continue;
    }
    const WordRow& w = row->by_lens[lens_index(r.plan, n.lens)];
    c.head = w.head.label();
    const int top = w.top_target();
    c.target = top >= 0 ? row->words[size_t(top)] : "(none)";
    if (const auto d = w.displayed(); d && top >= 0) c.displayed = (*d)[size_t(top)];
    c.sink_share = w.sink_share();
    c.raw_share = w.top_share();
    std::vector<std::string> moved;
    if (n.head && *n.head != c.head) moved.push_back(fmt::format("head {} (recorded {})", c.head, *n.head));
    if (c.target != n.target) moved.push_back(fmt::format("target {} (recorded {})", c.target, n.target));
    auto check = [&](const char* what, std::optional<double> recorded, std::optional<double> derived) {
      if (!recorded) return;
      if (!derived || !(std::fabs(*derived - *recorded) <= n.tolerance))
        moved.push_back(derived ? fmt::format("{} {:.6g} (recorded {:.6g}, tolerance {:.2g})", what, *derived,
                                              *recorded, n.tolerance)
                                : fmt::format("{} undefined (recorded {:.6g})", what, *recorded));
    };
    check("displayed", n.displayed, c.displayed);
    check("sink share", n.sink_share, c.sink_share);
    check("raw share", n.raw_share, c.raw_share);
    if (!moved.empty()) c.problem = fmt::format("moved: {}", fmt::join(moved, "; "));
    out.push_back(c);
  }
  return out;
}

}  // namespace

AuditResult run_audit(const StudyPlan& plan, const Checkpoint& ck, unsigned threads, RowFault row_fault,
                      const AuditProgress& progress) {
  AuditResult r;
  r.plan = plan;
  r.version = build_version();
  r.plan_sha256 = sha256_file(plan.file);
  r.model_sha256 = ck.model_sha256;
  r.sentences_sha256 = sha256_file(plan.sentences);
  r.model_dir = ck.dir.string();
  const SafetensorsFile model_file = SafetensorsFile::open(ck.dir / "model.safetensors");
  if (auto it = model_file.metadata().find("generator"); it != model_file.metadata().end())
    r.model_generator = it->second;
  std::optional<RecordedNumbers> recorded;
  std::set<std::string> named;  // sentences the recorded numbers name
  if (plan.recorded) {
    recorded = load_recorded_numbers(*plan.recorded);
    r.recorded_sha256 = sha256_file(*plan.recorded);
    for (const RecordedNumber& n : recorded->numbers) named.insert(n.sentence);
  }

  SentenceStream stream(plan.sentences);
  const BertTokenizer tokenizer(ck.vocab);
  const runtime::Encoder encoder(ck.config, ck.weights);
  const int L = ck.config.num_hidden_layers, H = ck.config.num_attention_heads;
  AuditTally tally(r.plan);
  std::vector<AuditRow> named_rows;
  // A batch of sentences at a time, each into its own slot, folded in sentence order: the result
  // does not depend on the thread count, and no more than a batch of rows is ever held.
  const size_t batch = 32 * std::max(1u, threads);
  for (std::vector<Sentence> sentences; !(sentences = stream.next(batch)).empty();) {
    std::vector<std::vector<AuditRow>> rows(sentences.size());
    std::vector<std::vector<NormRatio>> ratios(sentences.size());
    parallel_for(sentences.size(), threads, [&](size_t i) {
      const Sentence& s = sentences[i];
      const Encoding enc = encode_sentence(tokenizer, s, size_t(ck.config.max_position_embeddings), plan.sentences);
      const Trace trace = encoder.forward(enc, Record::instrument);
      const WordLayout layout = WordLayout::of(trace);
      for (int w = 0; w < static_cast<int>(layout.words.size()); ++w) {
        AuditRow row{s.id, w, enc.words, {}};
        for (Lens lens : plan.lenses)
          row.by_lens.push_back(instrument_row(trace, layout, lens, w, plan.head_rule, L, H, row_fault));
        rows[i].push_back(std::move(row));
      }
      const size_t T = enc.ids.size();
      for (int l = 0; l < L; ++l) {
        const Tensor& vn = *trace.find(fmt::format("layer.{}.value_norm", l));
        const Tensor& fn = *trace.find(fmt::format("layer.{}.transformed_norm", l));
        for (int h = 0; h < H; ++h) {
          const double* v = vn.values.data() + size_t(h) * T;
          const double* f = fn.values.data() + size_t(h) * T;
          double mv = 0, mf = 0;
          for (size_t t = 1; t + 1 < T; ++t) {
            mv += v[t];
            mf += f[t];
          }
          mv /= double(T - 2);
          mf /= double(T - 2);
          ratios[i].push_back({s.id, {l, h}, v[0] / mv, v[T - 1] / mv, f[0] / mf, f[T - 1] / mf});
        }
      }
    });
    for (size_t i = 0; i < sentences.size(); ++i) {
      const bool shown = r.sentences++ < kShownSentences;
      for (AuditRow& row : rows[i]) {
        tally.add(row);
        if (named.count(row.sentence)) named_rows.push_back(row);
        if (shown) r.rows.push_back(std::move(row));
      }
      for (const NormRatio& n : ratios[i]) {
        tally.add(n);
        if (shown) r.ratios.push_back(n);
      }
    }
    if (progress) progress(r.sentences, stream.total());
  }
  tally.finish(r);
  if (recorded) r.recorded = check_recorded(r, named_rows, *recorded);
  return r;
}

}  // namespace lenscheck
