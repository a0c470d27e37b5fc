#include "harness/audit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

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

double criterion_value(const AuditResult& r, const AbandonCriterion& c) {
  const size_t li = lens_index(r.plan, c.lens);
  const LensStats& s = r.stats.at(li);
  switch (c.stat) {
    case Stat::median_sink_share: return s.median;
    case Stat::worst_row_sink_share: return s.worst;
    case Stat::rows_with_sink_above:
      return static_cast<double>(std::count_if(r.rows.begin(), r.rows.end(), [&](const AuditRow& row) {
        return row.by_lens[li].sink_share().value_or(0) > *c.threshold;
      }));
    case Stat::rows_worse_than_baseline: return static_cast<double>(s.worse);
    case Stat::largest_relative_worsening: return s.largest_relative_worsening;
    case Stat::heads_kept_fraction:
      return s.rows ? static_cast<double>(s.kept_head) / static_cast<double>(s.rows) : 0;
  }
  return 0;
}

void summarise_audit(AuditResult& r) {
  r.stats.clear();
  for (size_t li = 0; li < r.plan.lenses.size(); ++li) {
    LensStats s;
    s.lens = r.plan.lenses[li];
    std::vector<double> shares;
    for (const AuditRow& row : r.rows) {
      ++s.rows;
      const WordRow& w = row.by_lens[li];
      const WordRow& base = row.by_lens[0];
      if (w.head == base.head) ++s.kept_head;
      const auto share = w.sink_share();
      if (!share) {
        ++s.undefined;
        continue;
      }
      shares.push_back(*share);
      if (*share > s.worst || s.worst_where.empty()) {
        s.worst = *share;
        s.worst_where = where(row);
      }
      s.above_50 += *share > 0.5;
      s.above_90 += *share > 0.9;
      const auto base_share = base.sink_share();
      if (li > 0 && base_share && *share > *base_share) {
        ++s.worse;
        const double relative = *base_share > 0 ? (*share - *base_share) / *base_share : INFINITY;
        if (relative > s.largest_relative_worsening) {
          s.largest_relative_worsening = relative;
          s.largest_worsening_where = where(row);
        }
      }
    }
    s.median = median(shares);
    r.stats.push_back(s);
  }
  std::vector<double> cv, sv, ct, st;
  for (const NormRatio& n : r.ratios) {
    cv.push_back(n.cls_value);
    sv.push_back(n.sep_value);
    ct.push_back(n.cls_transformed);
    st.push_back(n.sep_transformed);
  }
  r.cls_value = summarise_ratios(cv);
  r.sep_value = summarise_ratios(sv);
  r.cls_transformed = summarise_ratios(ct);
  r.sep_transformed = summarise_ratios(st);
  r.criteria.clear();
  for (const AbandonCriterion& c : r.plan.abandon_if) {
    const double v = criterion_value(r, c);
    r.criteria.push_back({c, v, c.above ? v > *c.above : v < *c.below});
  }
}

namespace {

std::vector<RecordedCheck> check_recorded(const AuditResult& r, const RecordedNumbers& rec) {
  std::vector<RecordedCheck> out;
  for (const RecordedNumber& n : rec.numbers) {
    RecordedCheck c;
    c.number = n;
    const AuditRow* row = nullptr;
    int matches = 0;
    for (const AuditRow& candidate : r.rows)
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

AuditResult run_audit(const StudyPlan& plan, const Checkpoint& ck, unsigned threads, RowFault row_fault) {
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

  const std::vector<Sentence> sentences = load_sentences(plan.sentences);
  r.sentences = sentences.size();
  const BertTokenizer tokenizer(ck.vocab);
  const runtime::Encoder encoder(ck.config, ck.weights);
  const int L = ck.config.num_hidden_layers, H = ck.config.num_attention_heads;
  // Each sentence's rows and ratios into its own slot, then in sentence order.
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
    std::move(rows[i].begin(), rows[i].end(), std::back_inserter(r.rows));
    r.ratios.insert(r.ratios.end(), ratios[i].begin(), ratios[i].end());
  }
  summarise_audit(r);
  if (plan.recorded) {
    const RecordedNumbers rec = load_recorded_numbers(*plan.recorded);
    r.recorded_sha256 = sha256_file(*plan.recorded);
    r.recorded = check_recorded(r, rec);
  }
  return r;
}

}  // namespace lenscheck
