#include "gate/calibrate.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <optional>

#include "common/parallel.h"
#include "common/report_file.h"
#include "gate/verify.h"
#include "model/seeded_rng.h"
#include "oracle/oracle.h"
#include "runtime/encoder.h"

namespace lenscheck {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// [lo, hi] uniformly; an integer in [lo, hi] for pick().
double between(SeededRng& rng, double lo, double hi) { return lo + (hi - lo) * rng.uniform(); }
int pick(SeededRng& rng, int lo, int hi) { return lo + static_cast<int>(rng.next() % uint64_t(hi - lo + 1)); }

constexpr int kSweepVocab = 1000;

void record(std::map<std::string, FamilyRatios>& families, const TraceComparison& c) {
  for (const TensorComparison& t : c.tensors)
    if (t.derived) {
      FamilyRatios& f = families[family_of(t.name)];
      f.ratios.values.push_back(t.derived->ratio);
      if (t.derived->benchmark_error < t.derived->floor) ++f.floored;
      if (t.local) {
        f.local.values.push_back(t.local->ratio);
        if (t.local->benchmark_error < t.local->floor) ++f.local_floored;
      }
    }
}

std::string first_failure(const TraceComparison& c) {
  if (!c.problem.empty()) return c.problem;
  const TensorComparison* t = c.first_divergence();
  if (!t) return "";
  if (!t->problem.empty()) return t->name + ": " + t->problem;
  return fmt::format("{}{}: {:.3g}x libtorch's fp32 error (k {:g})", t->name, t->worst_label, t->derived->ratio,
                     t->tolerance.k);
}

// The sweep models' vocabulary: BERT's special tokens at their ids, then the tokens sweep_model names.
const Vocab& sweep_vocab() {
  static const Vocab vocab = [] {
    std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    for (int id = 5; id < kSweepVocab; ++id) tokens.push_back(fmt::format("t{}", id));
    return Vocab::from_tokens(std::move(tokens), "the calibration sweep");
  }();
  return vocab;
}

// A checkpoint held in memory, for the judge of a sweep model.
Checkpoint in_memory(const BertConfig& config, BertWeights weights, const std::string& name) {
  Checkpoint ck;
  ck.dir = name;
  ck.config = config;
  ck.weights = std::move(weights);
  ck.vocab = sweep_vocab();
  return ck;
}

// The checkpoint with `fault` of size `delta` applied (a copy; none for a runtime fault, which
// travels beside the checkpoint as it is).
struct Mutant {
  std::optional<Checkpoint> checkpoint;
  std::optional<runtime::Stages> stages;
};

// The shipped stages, but the last layer's head 0 probabilities times (1 + delta).
runtime::Stages last_layer_probs_scaled(double delta) {
  const float factor = 1.0f + static_cast<float>(delta);
  const auto scaled = runtime::attend_with([factor](const runtime::Pass& p, const runtime::LayerOf&, float* probs) {
    runtime::softmax_rows(probs, p.H * p.T, p.T, p.workers);
    for (size_t e = 0; e < p.T * p.T; ++e) probs[e] *= factor;  // head 0's rows
  });
  runtime::Stages s = runtime::shipped_stages();
  s.attend = [shipped = s.attend, scaled](const runtime::Pass& p, const runtime::LayerOf& l, auto... buffers) {
    (l.index + 1 == l.count ? scaled : shipped)(p, l, buffers...);
  };
  return s;
}

Mutant mutant_of(const Checkpoint& ck, GradedFault fault, double delta) {
  Mutant m;
  if (fault != GradedFault::probs_scaled) m.checkpoint = ck;
  LayerWeights* last = m.checkpoint ? &m.checkpoint->weights.layers.back() : nullptr;
  switch (fault) {
    case GradedFault::weight_scaled:
      for (float& w : last->value_w.values) w = static_cast<float>(w * (1 + delta));
      break;
    case GradedFault::bias_shifted: {
      std::vector<float>& b = last->output_b.values;
      double square_sum = 0;
      for (float x : b) square_sum += double(x) * x;
      const double shift = delta * std::sqrt(square_sum / double(b.size()));
      // Alternating signs: a shift of every feature alike would be taken out by the LayerNorm.
      for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(b[i] + (i % 2 ? -shift : shift));
      break;
    }
    case GradedFault::layer_norm_eps: m.checkpoint->config.layer_norm_eps += delta; break;
    case GradedFault::probs_scaled: m.stages = last_layer_probs_scaled(delta); break;
  }
  return m;
}

bool is_runtime_fault(GradedFault fault) { return fault == GradedFault::probs_scaled; }

}  // namespace

SweepModel sweep_model(uint64_t seed) {
  SeededRng rng(seed);
  SweepModel m;
  m.seed = seed;
  BertConfig& c = m.config;
  c.num_hidden_layers = pick(rng, 1, 12);
  const int head_dim = std::array{16, 32, 64}[size_t(pick(rng, 0, 2))];
  c.num_attention_heads = pick(rng, 1, std::min(12, 768 / head_dim));
  c.hidden_size = c.num_attention_heads * head_dim;
  c.intermediate_size = 4 * c.hidden_size;
  c.hidden_act = std::array{"gelu", "gelu", "gelu_new", "relu"}[size_t(pick(rng, 0, 3))];
  c.layer_norm_eps = pick(rng, 0, 1) ? 1e-12 : 1e-5;
  c.max_position_embeddings = 128;
  c.type_vocab_size = 2;
  c.vocab_size = kSweepVocab;
  validate_config(c, "the calibration sweep");

  WeightStatistics& s = m.statistics;
  s.weight_sd = between(rng, 0.02, 0.08);
  s.bias_sd = between(rng, 0.0, 0.08);
  s.gain_sd = between(rng, 0.02, 0.3);
  s.ln_bias_sd = between(rng, 0.0, 0.1);
  s.outlier_dims = std::min(pick(rng, 0, 3), c.hidden_size);
  s.outlier_gain = between(rng, 1, 20);

  const int content = pick(rng, 1, c.max_position_embeddings - 2);
  auto add = [&](int id, int word) {
    m.input.ids.push_back(id);
    m.input.tokens.push_back(id == 2 ? "[CLS]" : id == 3 ? "[SEP]" : fmt::format("t{}", id));
    m.input.word_ids.push_back(word);
  };
  add(2, -1);
  for (int t = 0; t < content; ++t) {
    add(pick(rng, 5, kSweepVocab - 1), t);
    m.input.words.push_back(m.input.tokens.back());
  }
  add(3, -1);
  return m;
}

std::string fault_name(GradedFault fault) {
  switch (fault) {
    case GradedFault::weight_scaled: return "weight-scaled";
    case GradedFault::bias_shifted: return "bias-shifted";
    case GradedFault::layer_norm_eps: return "layer-norm-eps";
    case GradedFault::probs_scaled: return "probs-scaled";
  }
  return "?";
}

const std::vector<GradedFault>& graded_faults() {
  static const std::vector<GradedFault> all = {GradedFault::weight_scaled, GradedFault::bias_shifted,
                                               GradedFault::layer_norm_eps, GradedFault::probs_scaled};
  return all;
}

size_t CalibrationResult::false_alarms() const {
  size_t n = 0;
  for (const SweepResult& s : sweep) n += !s.pass;
  for (const FixtureResult& f : fixtures) n += f.failed_sentences;
  return n;
}

double CalibrationResult::threshold(const std::vector<double>& deltas,
                                    const std::vector<std::pair<bool, double>>& killed) {
  // deltas run from large to small: the threshold is the last of the leading run of kills.
  double smallest = 0;
  for (size_t i = 0; i < deltas.size() && killed[i].first; ++i) smallest = deltas[i];
  return smallest;
}

CalibrationResult calibrate(const Tolerances& tolerances, const CalibrationOptions& o,
                            const std::function<void(const std::string&)>& progress) {
  CalibrationResult r;
  r.version = build_version();
  r.backend = oracle::Oracle::backend();
  r.tolerances_file = tolerances.file.string();
  r.options = o;
  if (!std::is_sorted(o.deltas.rbegin(), o.deltas.rend()))
    throw std::invalid_argument("deltas must run from large to small");

  // False alarms on the sweep: one model a task, each judging its own random input.
  const auto sweep_start = std::chrono::steady_clock::now();
  r.sweep.resize(o.models);
  std::vector<TraceComparison> comparisons(o.models);
  std::mutex progress_lock;
  size_t done = 0;
  parallel_for(o.models, o.threads, [&](size_t i) {
    SweepResult& s = r.sweep[i];
    s.model = sweep_model(o.seed * 1000003 + i);
    const Checkpoint ck = in_memory(s.model.config, generated_weights(s.model.config, s.model.seed, s.model.statistics),
                                    fmt::format("sweep model {}", i));
    const CandidateRun run = o.candidate.run(ck, {s.model.input}, {}, 1);
    // Judged as judge_candidate does: on the run's own quantized weights and integer sums.
    const Judge judge(ck, tolerances, Rule::derived, o.candidate.arithmetic, run.quantized, run.int8_sums);
    comparisons[i] = judge.judge(run.traces.at(0), judge.references(s.model.input));
    s.pass = comparisons[i].pass();
    s.failure = first_failure(comparisons[i]);
    for (const TensorComparison& t : comparisons[i].tensors)
      if (t.bound_used > s.worst_bound_used) {
        s.worst_bound_used = t.bound_used;
        s.worst_at = t.name + t.worst_label;
      }
    const std::lock_guard lock(progress_lock);
    if (++done % 20 == 0 || done == o.models) progress(fmt::format("sweep: {}/{} models", done, o.models));
  });
  for (const TraceComparison& c : comparisons) record(r.sweep_families, c);
  r.sweep_seconds = seconds_since(sweep_start);

  const std::vector<Sentence> sentences = o.fixtures.empty() ? std::vector<Sentence>{} : load_sentences(o.sentences_file);
  for (const std::filesystem::path& dir : o.fixtures) {
    const auto start = std::chrono::steady_clock::now();
    const Checkpoint ck = load_checkpoint(dir);
    FixtureResult f;
    f.name = dir.filename().string();
    f.dir = dir.string();
    f.sha256 = ck.model_sha256;
    f.sentences = sentences.size();
    const BertTokenizer tokenizer(ck.vocab, ck.tokenizer);
    std::vector<Encoding> encodings;
    for (const Sentence& s : sentences)
      encodings.push_back(encode_sentence(tokenizer, s, size_t(ck.config.max_position_embeddings), o.sentences_file));
    const CandidateRun run = o.candidate.run(ck, encodings, {}, o.threads);
    const std::vector<Trace>& fault_free = run.traces;
    const Judge judge(ck, tolerances, Rule::derived, o.candidate.arithmetic, run.quantized, run.int8_sums);
    std::vector<Judge::References> refs(encodings.size());
    parallel_for(encodings.size(), o.threads, [&](size_t i) { refs[i] = judge.references(encodings[i]); });
    for (size_t i = 0; i < encodings.size(); ++i) {
      const TraceComparison c = judge.judge(fault_free[i], refs[i]);
      f.failed_sentences += !c.pass();
      record(f.families, c);
    }
    progress(fmt::format("{}: {} of {} sentences pass the gate", f.name, f.sentences - f.failed_sentences, f.sentences));

    // Detection: every fault the candidate can be given at every delta, judged sentence by sentence
    // until one fails.
    std::vector<GradedFault> faults;
    for (GradedFault g : graded_faults())
      if (o.candidate.replaceable_stages || !is_runtime_fault(g)) faults.push_back(g);
    std::vector<std::pair<bool, double>> outcomes(faults.size() * o.deltas.size());
    parallel_for(outcomes.size(), o.threads, [&](size_t i) {
      const Mutant m = mutant_of(ck, faults[i / o.deltas.size()], o.deltas[i % o.deltas.size()]);
      const std::vector<Trace> traces = o.candidate.run(m.checkpoint ? *m.checkpoint : ck, encodings, m.stages ? &*m.stages : nullptr, 1).traces;
      double largest = 0;
      for (size_t s = 0; s < encodings.size(); ++s) {
        const TraceComparison c = judge.judge(traces[s], refs[s]);
        for (const TensorComparison& t : c.tensors) largest = std::max(largest, t.bound_used);
        if (!c.pass()) break;
      }
      outcomes[i] = {largest > 1, largest};
    });
    for (size_t i = 0; i < outcomes.size(); ++i)
      f.detection[fault_name(faults[i / o.deltas.size()])].push_back(outcomes[i]);
    f.seconds = seconds_since(start);
    progress(fmt::format("{}: detection measured in {:.1f} s", f.name, f.seconds));
    r.fixtures.push_back(std::move(f));
  }
  return r;
}

}  // namespace lenscheck
