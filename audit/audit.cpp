#include "audit/audit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>

#include "model/error.h"
#include "model/sha256.h"
#include "common/parallel.h"
#include "common/report_file.h"
#include "runtime/encoder.h"

namespace lenscheck {

namespace {

size_t lens_index(const StudyPlan& plan, Lens lens) {
  return static_cast<size_t>(std::find(plan.lenses.begin(), plan.lenses.end(), lens) - plan.lenses.begin());
}

const double kLogGamma = std::log((1 + Histogram::kRatioError) / (1 - Histogram::kRatioError));
const int64_t kLowestRatioBucket = int64_t(std::floor(std::log(1e-9) / kLogGamma));
const int64_t kHighestRatioBucket = int64_t(std::floor(std::log(1e9) / kLogGamma));
const int64_t kZeroRatioBucket = kLowestRatioBucket - 1;
const int64_t kShareBuckets = int64_t(std::lround(1 / Histogram::kShareWidth));

// A NaN or Inf lens weight (or mixing ratio, where the audit reads them) is a gate failure, not a row
// without weight: it stops the audit, named.
void require_finite_lenses(const Trace& trace, const std::vector<Lens>& lenses, int layers, const std::string& sentence,
                           bool mixing) {
  std::vector<std::string> names;
  for (int l = 0; l < layers; ++l) {
    for (Lens lens : lenses) names.push_back(lens_tensor(lens, l));
    if (mixing)
      for (LayerTensor t : {LayerTensor::mixing_ratio_attention, LayerTensor::mixing_ratio_residual,
                            LayerTensor::mixing_ratio_residual_layernorm})
        names.push_back(trace_name(l, t));
  }
  for (const std::string& name : names) {
    const Tensor& t = *trace.find(name);
    for (size_t i = 0; i < t.values.size(); ++i)
      if (!std::isfinite(t.values[i]))
        throw NonFiniteError(fmt::format("sentence {}: {} holds {} at element {}: the runtime's lens is not a "
                                         "number, a gate failure", sentence, name, t.values[i], i));
  }
}

}  // namespace

void RowMax::offer(double v, const AuditRow& row, double baseline_share, double lens_share) {
  if (!where.empty() && !(v > value)) return;
  value = v;
  where = fmt::format("{}: {}", row.sentence, row.word_text());
  at = {row.ordinal, row.word};
  baseline = baseline_share;
  share = lens_share;
}

void RowMax::merge(const RowMax& o) {
  if (o.where.empty()) return;
  if (where.empty() || o.value > value || (o.value == value && o.at < at)) *this = o;
}

// Clamped before the conversion, which an infinite ratio (a head whose content norms are all 0)
// would otherwise make undefined.
int64_t Histogram::bucket(double x) const {
  if (scale_ == Scale::share) return int64_t(std::clamp(std::floor(x / kShareWidth), 0.0, double(kShareBuckets - 1)));
  if (!(x > 0)) return kZeroRatioBucket;
  return int64_t(std::clamp(std::floor(std::log(x) / kLogGamma), double(kLowestRatioBucket), double(kHighestRatioBucket)));
}

double Histogram::value_of(int64_t b) const {
  if (scale_ == Scale::share) return (double(b) + 0.5) * kShareWidth;
  if (b == kZeroRatioBucket) return 0;
  const double gamma = std::exp(kLogGamma);
  return 2 * std::exp(double(b + 1) * kLogGamma) / (gamma + 1);
}

void Histogram::merge(const Histogram& other) {
  for (const auto& [b, n] : other.buckets_) buckets_[b] += n;
}

void Histogram::set(int64_t b, uint64_t n) {
  const bool valid = scale_ == Scale::share ? b >= 0 && b < kShareBuckets
                                            : b == kZeroRatioBucket || (b >= kLowestRatioBucket && b <= kHighestRatioBucket);
  if (!valid || n == 0) throw std::out_of_range(fmt::format("bucket {} (count {}) cannot occur", b, n));
  buckets_[b] = n;
}

uint64_t Histogram::count() const {
  uint64_t n = 0;
  for (const auto& [b, c] : buckets_) n += c;
  return n;
}

double Histogram::median() const {
  const uint64_t n = count();
  if (n == 0) return 0;
  // The values at ranks (n − 1) / 2 and n / 2, averaged: the same rank rule as an exact median.
  auto at_rank = [&](uint64_t rank) {
    uint64_t seen = 0;
    for (const auto& [b, c] : buckets_)
      if ((seen += c) > rank) return value_of(b);
    return value_of(buckets_.rbegin()->first);
  };
  return 0.5 * (at_rank((n - 1) / 2) + at_rank(n / 2));
}

void RatioTally::add(double x) {
  values.add(x);
  below_one += x < 1.0;
}

RatioSummary RatioTally::summary() const { return {values.median(), below_one, values.count()}; }

void RatioTally::merge(const RatioTally& o) {
  values.merge(o.values);
  below_one += o.below_one;
}

void LayerDepth::add(size_t lens, const WordRow& row) {
  if (const auto share = row.sink_share())
    shares.at(lens).add(*share);
  else
    ++undefined.at(lens);
}

void LayerDepth::merge(const LayerDepth& o) {
  cls_value.merge(o.cls_value);
  sep_value.merge(o.sep_value);
  for (size_t li = 0; li < shares.size(); ++li) {
    shares[li].merge(o.shares.at(li));
    undefined[li] += o.undefined.at(li);
  }
}

bool AuditResult::abandon() const {
  return std::any_of(criteria.begin(), criteria.end(), [](const CriterionResult& c) { return c.triggered; });
}

bool AuditResult::recorded_hold() const {
  return std::all_of(recorded.begin(), recorded.end(), [](const RecordedCheck& c) { return c.problem.empty(); });
}

AuditTally::AuditTally(const StudyPlan& plan)
    : shares(plan.lenses.size(), Histogram(Histogram::Scale::share)),
      context_shares(plan.lenses.size(), Histogram(Histogram::Scale::share)) {
  for (Lens lens : plan.lenses) {
    LensStats s;
    s.lens = lens;
    stats.push_back(s);
  }
  for (const AbandonCriterion& c : plan.abandon_if) {
    const bool on_shares = c.stat == Stat::worst_row_sink_share || c.stat == Stat::median_sink_share;
    const std::optional<double> threshold = c.threshold ? c.threshold : on_shares ? (c.above ? c.above : c.below) : std::nullopt;
    thresholds.push_back(threshold ? std::optional(ThresholdCount{lens_index(plan, c.lens), *threshold}) : std::nullopt);
  }
}

void AuditTally::add(const AuditRow& row) {
  const WordRow& base = row.by_lens[0];
  const auto base_share = base.sink_share();
  for (size_t li = 0; li < stats.size(); ++li) {
    LensStats& s = stats[li];
    ++s.rows;
    const WordRow& w = row.by_lens[li];
    if (w.head.same_place(base.head)) ++s.kept_head;
    s.self_only += w.self_only();
    if (const auto context = w.context_sink_share()) {
      ++s.context_rows;
      s.context_above_50 += *context > 0.5;
      s.context_worst.offer(*context, row, base_share.value_or(NAN), *context);
      context_shares[li].add(*context);
    }
    const auto share = w.sink_share();
    if (!share) {
      ++s.undefined;
      continue;
    }
    shares[li].add(*share);
    for (auto& t : thresholds)
      if (t && t->lens == li) t->rows += *share > t->threshold;
    s.worst.offer(*share, row, base_share.value_or(NAN), *share);
    s.above_50 += *share > 0.5;
    s.above_90 += *share > 0.9;
    if (li > 0 && base_share && *share > *base_share) {
      ++s.worse;
      s.worse_by_resolution += *share - *base_share >= kShareResolution;
      if (*base_share >= kShareResolution)
        s.relative_worsening.offer((*share - *base_share) / *base_share, row, *base_share, *share);
      s.points_worsening.offer(*share - *base_share, row, *base_share, *share);
    }
  }
}

void AuditTally::add(const NormRatio& n) {
  cls_value.add(n.cls_value);
  sep_value.add(n.sep_value);
  cls_transformed.add(n.cls_transformed);
  sep_transformed.add(n.sep_transformed);
  LayerDepth& layer = depth_of(size_t(n.head.layer));
  layer.cls_value.add(n.cls_value);
  layer.sep_value.add(n.sep_value);
}

LayerDepth& AuditTally::depth_of(size_t layer) {
  if (depth.size() <= layer) depth.resize(layer + 1, LayerDepth(stats.size()));
  return depth[layer];
}

void AuditTally::add(const std::vector<LayerDepth>& layers) {
  for (size_t l = 0; l < layers.size(); ++l) depth_of(l).merge(layers[l]);
}

void LayerMixing::merge(const LayerMixing& o) {
  attention.merge(o.attention);
  residual.merge(o.residual);
  residual_layernorm.merge(o.residual_layernorm);
}

void LayerMixing::add(double attention_ratio, double residual_ratio, double residual_layernorm_ratio) {
  attention.add(attention_ratio);
  residual.add(residual_ratio);
  residual_layernorm.add(residual_layernorm_ratio);
}

void AuditTally::add(const std::vector<LayerMixing>& layers) {
  if (mixing.size() < layers.size()) mixing.resize(layers.size());
  for (size_t l = 0; l < layers.size(); ++l) mixing[l].merge(layers[l]);
}

void AuditTally::merge(const AuditTally& o) {
  for (size_t li = 0; li < stats.size(); ++li) {
    LensStats& s = stats[li];
    const LensStats& t = o.stats.at(li);
    s.rows += t.rows;
    s.undefined += t.undefined;
    s.self_only += t.self_only;
    s.context_rows += t.context_rows;
    s.context_above_50 += t.context_above_50;
    s.context_worst.merge(t.context_worst);
    context_shares[li].merge(o.context_shares.at(li));
    s.worst.merge(t.worst);
    s.above_50 += t.above_50;
    s.above_90 += t.above_90;
    s.worse += t.worse;
    s.worse_by_resolution += t.worse_by_resolution;
    s.relative_worsening.merge(t.relative_worsening);
    s.points_worsening.merge(t.points_worsening);
    s.kept_head += t.kept_head;
    shares[li].merge(o.shares.at(li));
  }
  for (size_t c = 0; c < thresholds.size(); ++c)
    if (thresholds[c]) thresholds[c]->rows += o.thresholds.at(c).value().rows;
  cls_value.merge(o.cls_value);
  sep_value.merge(o.sep_value);
  cls_transformed.merge(o.cls_transformed);
  sep_transformed.merge(o.sep_transformed);
  add(o.mixing);
  add(o.depth);
}

void AuditTally::finish(AuditResult& r) const {
  r.stats = stats;
  r.shares = shares;
  r.context_shares = context_shares;
  for (size_t li = 0; li < stats.size(); ++li) {
    r.stats[li].median = shares[li].median();
    r.stats[li].context_median = context_shares[li].median();
  }
  r.share_thresholds.clear();
  for (const auto& t : thresholds)
    if (t) r.share_thresholds.push_back(*t);
  r.total_rows = stats.empty() ? 0 : stats[0].rows;
  r.cls_value = cls_value.summary();
  r.sep_value = sep_value.summary();
  r.cls_transformed = cls_transformed.summary();
  r.sep_transformed = sep_transformed.summary();
  r.mixing = mixing;
  r.depth = depth;
  r.criteria.clear();
  for (size_t ci = 0; ci < r.plan.abandon_if.size(); ++ci) {
    const AbandonCriterion& c = r.plan.abandon_if[ci];
    const LensStats& s = r.stats.at(lens_index(r.plan, c.lens));
    double v = 0;
    switch (c.stat) {
      case Stat::median_sink_share: v = s.median; break;
      case Stat::worst_row_sink_share: v = s.worst.value; break;
      case Stat::rows_with_sink_above: v = static_cast<double>(thresholds.at(ci).value().rows); break;
      case Stat::rows_worse_than_baseline: v = static_cast<double>(s.worse); break;
      case Stat::largest_relative_worsening: v = s.relative_worsening.value; break;
      case Stat::heads_kept_fraction:
        v = s.rows ? static_cast<double>(s.kept_head) / static_cast<double>(s.rows) : 0;
        break;
      case Stat::undefined_rows: v = static_cast<double>(s.undefined); break;
      case Stat::self_only_rows: v = static_cast<double>(s.self_only); break;
      case Stat::median_context_sink_share: v = s.context_median; break;
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

AuditShard AuditShard::parse(const std::string& text) {
  const size_t slash = text.find('/');
  auto number = [&](const std::string& digits) {
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
      throw InputError("--shard", fmt::format("\"{}\" is not K/N with whole numbers 0 <= K < N", text));
    return size_t(std::stoul(digits));
  };
  if (slash == std::string::npos) number("");
  const AuditShard shard{number(text.substr(0, slash)), number(text.substr(slash + 1))};
  if (shard.index >= shard.count) number("");
  return shard;
}

namespace {

// Layer l's ‖v‖ and ‖f(x)‖ of [CLS] and [SEP] over the mean of the content tokens', one NormRatio a head.
void add_norm_ratios(const Trace& trace, int l, const std::string& id, size_t ordinal, std::vector<NormRatio>& out) {
  const Tensor& vn = *trace.find(trace_name(l, LayerTensor::value_norm));
  const Tensor& fn = *trace.find(trace_name(l, LayerTensor::transformed_norm));
  const size_t H = size_t(vn.shape[0]), T = size_t(vn.shape[1]);
  for (size_t h = 0; h < H; ++h) {
    const double* v = vn.values.data() + h * T;
    const double* f = fn.values.data() + h * T;
    double mv = 0, mf = 0;
    for (size_t t = 1; t + 1 < T; ++t) {
      mv += v[t];
      mf += f[t];
    }
    mv /= double(T - 2);
    mf /= double(T - 2);
    out.push_back({id, {l, int(h)}, v[0] / mv, v[T - 1] / mv, f[0] / mf, f[T - 1] / mf, ordinal});
  }
}

}  // namespace

AuditPartial audit_shard(const StudyPlan& plan, const Checkpoint& ck, AuditShard shard, const AuditOptions& options) {
  // The executable's own hash names the build: shards from two builds of the same commit may differ.
  static const std::string build_sha256 = sha256_file("/proc/self/exe");
  AuditPartial p(plan);
  p.shard = shard;
  p.version = build_version();
  p.build_sha256 = build_sha256;
  p.plan_sha256 = sha256_file(plan.file);
  p.model_sha256 = ck.model_sha256;
  p.sentences_sha256 = sha256_file(plan.sentences);
  p.model_dir = ck.dir.string();
  if (auto it = ck.weights_metadata.find("generator"); it != ck.weights_metadata.end()) p.model_generator = it->second;
  std::set<std::string> named;  // sentences the recorded numbers name
  if (plan.recorded) {
    p.recorded_sha256 = sha256_file(*plan.recorded);
    for (const RecordedNumber& n : load_recorded_numbers(*plan.recorded).numbers) named.insert(n.sentence);
  }

  SentenceStream stream(plan.sentences);
  const BertTokenizer tokenizer(ck.vocab, ck.tokenizer);
  const runtime::Encoder encoder(ck.config, ck.weights);
  const int L = ck.config.num_hidden_layers, H = ck.config.num_attention_heads;
  const bool mixing = std::find(plan.lenses.begin(), plan.lenses.end(), Lens::residual_layernorm) != plan.lenses.end();
  // A batch of this shard's sentences at a time, each into its own slot, folded in sentence order:
  // the result does not depend on the thread count, and no more than a batch of rows is ever held.
  const size_t batch = 32 * std::max(1u, options.threads);
  size_t reported = 0;
  for (;;) {
    std::vector<Sentence> sentences;
    std::vector<size_t> ordinals;
    for (std::vector<Sentence> read; sentences.size() < batch && !(read = stream.next(batch)).empty();)
      for (Sentence& s : read) {
        if (shard.owns(p.corpus_sentences)) {
          ordinals.push_back(p.corpus_sentences);
          sentences.push_back(std::move(s));
        }
        ++p.corpus_sentences;
      }
    if (sentences.empty()) break;
    std::vector<std::vector<AuditRow>> rows(sentences.size());
    std::vector<std::vector<NormRatio>> ratios(sentences.size());
    std::vector<std::vector<LayerMixing>> mixed(sentences.size());  // each sentence's mixing ratios, per layer
    // Each sentence's head rows, every head of every layer under every lens, per layer.
    std::vector<std::vector<LayerDepth>> depths(sentences.size(),
                                                std::vector<LayerDepth>(size_t(L), LayerDepth(plan.lenses.size())));
    parallel_for(sentences.size(), options.threads, [&](size_t i) {
      const Sentence& s = sentences[i];
      const Encoding enc = encode_sentence(tokenizer, s, size_t(ck.config.max_position_embeddings), plan.sentences);
      const Trace trace = encoder.forward(enc, mixing ? Record::instrument_residual : Record::instrument);
      require_finite_lenses(trace, plan.lenses, L, s.id, mixing);
      const WordLayout layout = WordLayout::of(trace);
      for (int w = 0; w < static_cast<int>(layout.words.size()); ++w) {
        AuditRow row{s.id, w, enc.words, {}, ordinals[i]};
        for (size_t li = 0; li < plan.lenses.size(); ++li) {
          // Every head's row, for the depth; the instrument shows the one the rule opens (instrument_row).
          std::vector<WordRow> heads = head_rows(trace, layout, plan.lenses[li], w, L, H, options.row_edit);
          for (const WordRow& head : heads) depths[i][size_t(head.head.layer)].add(li, head);
          row.by_lens.push_back(std::move(heads[opened_head(heads, plan.head_rule, H)]));
        }
        rows[i].push_back(std::move(row));
      }
      const size_t T = enc.ids.size();
      for (int l = 0; l < L; ++l) {
        add_norm_ratios(trace, l, s.id, ordinals[i], ratios[i]);
        if (!mixing) continue;
        auto ratio = [&](LayerTensor t) { return trace.find(trace_name(l, t))->values.data(); };
        const double *a = ratio(LayerTensor::mixing_ratio_attention), *r = ratio(LayerTensor::mixing_ratio_residual),
                     *n = ratio(LayerTensor::mixing_ratio_residual_layernorm);
        LayerMixing& layer = mixed[i].emplace_back();
        for (size_t t = 1; t + 1 < T; ++t) layer.add(a[t], r[t], n[t]);
      }
    });
    for (size_t i = 0; i < sentences.size(); ++i) {
      ++p.sentences;
      const bool shown = ordinals[i] < options.shown_sentences;
      for (AuditRow& row : rows[i]) {
        p.tally.add(row);
        if (named.count(row.sentence)) p.named_rows.push_back(row);
        if (shown) p.shown_rows.push_back(std::move(row));
      }
      for (const NormRatio& n : ratios[i]) {
        p.tally.add(n);
        if (shown) p.shown_ratios.push_back(n);
      }
      p.tally.add(mixed[i]);
      p.tally.add(depths[i]);
    }
    if (options.progress) options.progress(reported = p.corpus_sentences, stream.total());
  }
  // The corpus may end in other shards' sentences.
  if (options.progress && reported < p.corpus_sentences) options.progress(p.corpus_sentences, stream.total());
  return p;
}

namespace {

std::string named(const AuditPartial& p) { return p.file.empty() ? "(partial in memory)" : p.file.string(); }

}  // namespace

AuditMerge::AuditMerge(const StudyPlan& plan)
    : plan_(plan), plan_sha256_(sha256_file(plan.file)), first_(plan), tally_(plan) {
  result_.plan = plan;
}

void AuditMerge::add(AuditPartial p) {
  if (p.plan_sha256 != plan_sha256_)
    throw InputError(p.file, fmt::format("written for a plan with SHA-256 {}, not {} (SHA-256 {})", p.plan_sha256,
                                         plan_.file.string(), plan_sha256_));
  if (seen_.empty()) {
    if (plan_.recorded && sha256_file(*plan_.recorded) != p.recorded_sha256)
      throw InputError(*plan_.recorded, fmt::format("has changed since {} was written (SHA-256 {} then)", named(p),
                                                    p.recorded_sha256));
    first_ = p;  // for the checks of those that follow; its rows and tally are merged below
    first_.tally = AuditTally(plan_);
    first_.shown_rows.clear();
    first_.shown_ratios.clear();
    first_.named_rows.clear();
  }
  auto same = [&](const char* what, const std::string& mine, const std::string& theirs) {
    if (mine != theirs) throw InputError(p.file, fmt::format("{} {} differs from {} in {}", what, mine, theirs, named(first_)));
  };
  same("model SHA-256", p.model_sha256, first_.model_sha256);
  same("corpus SHA-256", p.sentences_sha256, first_.sentences_sha256);
  same("recorded numbers' SHA-256", p.recorded_sha256, first_.recorded_sha256);
  same("build SHA-256", p.build_sha256, first_.build_sha256);
  same("build", p.version, first_.version);
  if (p.shard.count != first_.shard.count)
    throw InputError(p.file, fmt::format("is shard {}, but {} is of {} shards", p.shard.label(), named(first_),
                                         first_.shard.count));
  if (p.corpus_sentences != first_.corpus_sentences)
    throw InputError(p.file, fmt::format("counted {} sentences in the corpus, {} counted {}", p.corpus_sentences,
                                         named(first_), first_.corpus_sentences));
  if (const auto [at, fresh] = seen_.emplace(p.shard.index, named(p)); !fresh)
    throw InputError(p.file, fmt::format("shard {} again: {} holds it already", p.shard.label(), at->second));

  tally_.merge(p.tally);
  result_.sentences += p.sentences;
  std::move(p.shown_rows.begin(), p.shown_rows.end(), std::back_inserter(result_.rows));
  std::move(p.shown_ratios.begin(), p.shown_ratios.end(), std::back_inserter(result_.ratios));
  std::move(p.named_rows.begin(), p.named_rows.end(), std::back_inserter(named_rows_));
}

AuditResult AuditMerge::finish() {
  if (seen_.empty()) throw InputError(plan_.file, "no partials to merge");
  for (size_t k = 0; k < first_.shard.count; ++k)
    if (!seen_.count(k)) {
      std::vector<std::string> given;
      for (const auto& [index, file] : seen_) given.push_back(std::to_string(index));
      throw InputError(first_.file.empty() ? plan_.file : first_.file.parent_path(),
                       fmt::format("shard {}/{} is missing: no partial for it among the {} given (shards {})", k,
                                   first_.shard.count, seen_.size(), fmt::join(given, ", ")));
    }
  AuditResult r = std::move(result_);
  r.version = first_.version;
  r.plan_sha256 = first_.plan_sha256;
  r.model_sha256 = first_.model_sha256;
  r.sentences_sha256 = first_.sentences_sha256;
  r.recorded_sha256 = first_.recorded_sha256;
  r.model_dir = first_.model_dir;
  r.model_generator = first_.model_generator;
  // Back into corpus order; within a sentence the rows (and the heads' ratios) keep theirs.
  auto by_sentence = [](const auto& a, const auto& b) { return a.ordinal < b.ordinal; };
  std::stable_sort(r.rows.begin(), r.rows.end(), by_sentence);
  std::stable_sort(r.ratios.begin(), r.ratios.end(), by_sentence);
  std::stable_sort(named_rows_.begin(), named_rows_.end(), by_sentence);
  tally_.finish(r);
  if (plan_.recorded) r.recorded = check_recorded(r, named_rows_, load_recorded_numbers(*plan_.recorded));
  return r;
}

AuditResult merge_audit(const StudyPlan& plan, std::vector<AuditPartial> partials) {
  AuditMerge merge(plan);
  for (AuditPartial& p : partials) merge.add(std::move(p));
  return merge.finish();
}

AuditResult run_audit(const StudyPlan& plan, const Checkpoint& ck, const AuditOptions& options) {
  return merge_audit(plan, {audit_shard(plan, ck, AuditShard{}, options)});
}

}  // namespace lenscheck
