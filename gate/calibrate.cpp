#include "gate/calibrate.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>

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
  runtime::Injected injected;
};

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
    case GradedFault::probs_scaled: m.injected = {runtime::Fault::last_layer_probs_scaled, delta}; break;
  }
  return m;
}

bool is_runtime_fault(GradedFault fault) { return fault == GradedFault::probs_scaled; }

}  // namespace

CalibrationCandidate runtime_candidate() {
  CalibrationCandidate c;
  c.run = [](const Checkpoint& ck, const std::vector<Encoding>& inputs, runtime::Injected fault, unsigned threads) {
    const runtime::Encoder encoder(ck.config, ck.weights, fault);
    std::vector<Trace> traces(inputs.size());
    parallel_for(inputs.size(), threads, [&](size_t i) { traces[i] = encoder.forward(inputs[i]); });
    return traces;
  };
  return c;
}

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
    const Judge judge(ck, tolerances, Rule::derived, o.candidate.arithmetic);
    const Trace candidate = o.candidate.run(ck, {s.model.input}, {}, 1).at(0);
    comparisons[i] = judge.judge(candidate, judge.references(s.model.input));
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
    const BertTokenizer tokenizer(ck.vocab);
    std::vector<Encoding> encodings;
    for (const Sentence& s : sentences)
      encodings.push_back(encode_sentence(tokenizer, s, size_t(ck.config.max_position_embeddings), o.sentences_file));
    const Judge judge(ck, tolerances, Rule::derived, o.candidate.arithmetic);
    std::vector<Judge::References> refs(encodings.size());
    parallel_for(encodings.size(), o.threads, [&](size_t i) { refs[i] = judge.references(encodings[i]); });
    const std::vector<Trace> fault_free = o.candidate.run(ck, encodings, {}, o.threads);
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
      if (o.candidate.has_fault_seam || !is_runtime_fault(g)) faults.push_back(g);
    std::vector<std::pair<bool, double>> outcomes(faults.size() * o.deltas.size());
    parallel_for(outcomes.size(), o.threads, [&](size_t i) {
      const Mutant m = mutant_of(ck, faults[i / o.deltas.size()], o.deltas[i % o.deltas.size()]);
      const std::vector<Trace> traces = o.candidate.run(m.checkpoint ? *m.checkpoint : ck, encodings, m.injected, 1);
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

namespace {

std::string delta_text(double d) { return d == 0 ? "none" : fmt::format("{:.0e}", d); }

std::string families_table(const std::map<std::string, FamilyRatios>& families) {
  std::string s = "| tensor family | tensors | global: worst ratio | 99th percentile | median | floor binding | "
                  "local: judged | worst ratio | 99th percentile | median | floor binding |\n"
                  "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& [name, f] : families)
    s += fmt::format("| `{}` | {} | {:.2f}× | {:.2f}× | {:.2f}× | {} | {} | {} |\n", name, f.ratios.values.size(),
                     f.ratios.max(), f.ratios.quantile(0.99), f.ratios.quantile(0.5), f.floored, f.local.values.size(),
                     f.local.values.empty() ? std::string("— | — | — | —")
                                            : fmt::format("{:.2f}× | {:.2f}× | {:.2f}× | {}", f.local.max(),
                                                          f.local.quantile(0.99), f.local.quantile(0.5), f.local_floored));
  return s;
}

std::string candidate_section(const CalibrationResult& r) {
  const CalibrationOptions& o = r.options;
  std::string s = fmt::format("## {}, declared {}\n\n- false alarms: **{}**\n- benchmark: {} and its rounding probes\n\n",
                              o.candidate.name, arithmetic_name(o.candidate.arithmetic), r.false_alarms(),
                              benchmark_label(o.candidate.arithmetic));
  size_t sweep_failed = 0, max_layers = 0, max_width = 0, max_tokens = 0;
  double max_gain = 0;
  for (const SweepResult& m : r.sweep) {
    sweep_failed += !m.pass;
    max_layers = std::max(max_layers, size_t(m.model.config.num_hidden_layers));
    max_width = std::max(max_width, size_t(m.model.config.hidden_size));
    max_tokens = std::max(max_tokens, m.model.input.ids.size());
    if (m.model.statistics.outlier_dims > 0) max_gain = std::max(max_gain, m.model.statistics.outlier_gain);
  }
  s += fmt::format("### False alarms on random models\n\n"
                   "{} random models (seed {}), each judged on one random sentence: **{} failed**. Layers up to {}, "
                   "width up to {}, up to {} tokens, weight spread 0.02–0.08, LayerNorm gain outliers up to {:.1f}. "
                   "{:.1f} s.\n\nThe error ratios per family, over every model and layer (fixtures/tolerances.yaml): "
                   "global, the candidate's error against the fp64 truth over the benchmark's; local, its error "
                   "against each op recomputed from its own inputs over the op's own rounding spread; \"floor "
                   "binding\" counts tensors whose benchmark error was below the floor:\n\n{}\n",
                   r.sweep.size(), o.seed, sweep_failed, max_layers, max_width, max_tokens, max_gain,
                   r.sweep_seconds, families_table(r.sweep_families));
  std::vector<const SweepResult*> closest;
  for (const SweepResult& m : r.sweep) closest.push_back(&m);
  std::sort(closest.begin(), closest.end(),
            [](const SweepResult* a, const SweepResult* b) { return a->worst_bound_used > b->worst_bound_used; });
  closest.resize(std::min<size_t>(closest.size(), 10));
  s += "The models nearest to a false alarm:\n\n| seed | layers × width (heads) | tokens | weight spread | outliers "
       "| bound used | at | result |\n|---|---|---|---|---|---|---|---|\n";
  for (const SweepResult* m : closest)
    s += fmt::format("| {} | {} × {} ({}) | {} | {:.3f} | {} × {:.1f} | {:.1f} % | `{}` | {} |\n", m->model.seed,
                     m->model.config.num_hidden_layers, m->model.config.hidden_size,
                     m->model.config.num_attention_heads, m->model.input.ids.size(), m->model.statistics.weight_sd,
                     m->model.statistics.outlier_dims, m->model.statistics.outlier_gain, 100 * m->worst_bound_used,
                     m->worst_at, m->pass ? "pass" : "**FALSE ALARM**: " + m->failure);

  s += "\n### Fixtures\n\n| fixture | SHA-256 | sentences | false alarms |\n|---|---|---|---|\n";
  for (const FixtureResult& f : r.fixtures)
    s += fmt::format("| `{}` | `{}` | {} | **{}** |\n", f.name, f.sha256.substr(0, 16), f.sentences,
                     f.failed_sentences);
  for (const FixtureResult& f : r.fixtures)
    s += fmt::format("\n#### `{}`: error ratios of the fault-free candidate\n\n{}", f.name, families_table(f.families));

  s += "\n### Detection threshold\n\n";
  std::string header = "| fixture | fault | threshold |", rule = "|---|---|---|";
  for (double d : o.deltas) {
    header += fmt::format(" δ = {} |", delta_text(d));
    rule += "---|";
  }
  s += header + "\n" + rule + "\n";
  for (const FixtureResult& f : r.fixtures)
    for (const auto& [fault, outcomes] : f.detection) {
      s += fmt::format("| `{}` | `{}` | **{}** |", f.name, fault, delta_text(CalibrationResult::threshold(o.deltas, outcomes)));
      for (const auto& [killed, used] : outcomes)
        s += killed ? fmt::format(" killed ({:.3g}×) |", used) : fmt::format(" survived ({:.0f} %) |", 100 * used);
      s += "\n";
    }
  return s;
}


}  // namespace

void write_calibration_markdown(const std::vector<CalibrationResult>& results, const std::filesystem::path& file) {
  if (results.empty()) throw std::invalid_argument("no calibration to write");
  const CalibrationResult& first = results.front();
  size_t alarms = 0;
  for (const CalibrationResult& r : results) alarms += r.false_alarms();
  std::string s = fmt::format("# lenscheck calibrate — the derived gate as a classifier\n\n"
                              "- build: `{}`\n- oracle: {}\n- tolerances: `{}`\n- false alarms: **{}** over {} "
                              "candidate(s)\n\n",
                              first.version, first.backend, first.tolerances_file, alarms, results.size());
  s += "Each candidate declares the scheme it computes in (README, \"Schemes\"), and each tensor is judged twice, "
       "with the same k for every scheme: globally, against the fp64 truth with libtorch computing in the scheme "
       "as the benchmark (fp32 natively, the others simulated in fp64, oracle/oracle.h); locally, against its op "
       "recomputed in the scheme from the candidate's own inputs, with the op's own rounding spread as the "
       "benchmark. False alarms: the fault-free candidate on the random-model sweep and on every sentence of every "
       "fixture. Detection: graded faults, judged on every sentence by both verdicts (the mutant is killed when "
       "one sentence fails the gate); the threshold is the smallest δ at which the fault and every larger one were "
       "killed:\n\n"
       "- `weight-scaled`: the last layer's W_V times (1 + δ)\n"
       "- `bias-shifted`: the last layer's FFN output bias plus δ · rms(bias), signs alternating\n"
       "- `layer-norm-eps`: every LayerNorm's eps plus δ\n"
       "- `probs-scaled`: the last layer's head 0 attention probabilities times (1 + δ) (in fp32: 1 + δ rounds "
       "to the nearest float); a fault of the runtime's own seam, which another implementation does not have\n\n"
       "Weight and eps faults are applied to the checkpoint, so every candidate computes them as it computes "
       "anything (ONNX Runtime from the exported faulty checkpoint).\n\n";
  s += "## Summary\n\n| candidate | declared | sweep models | sweep false alarms | fixture sentences | fixture false "
       "alarms | worst bound used (sweep) |\n|---|---|---|---|---|---|---|\n";
  for (const CalibrationResult& r : results) {
    size_t sweep_failed = 0, sentences = 0, fixture_failed = 0;
    double worst = 0;
    for (const SweepResult& m : r.sweep) {
      sweep_failed += !m.pass;
      worst = std::max(worst, m.worst_bound_used);
    }
    for (const FixtureResult& f : r.fixtures) {
      sentences += f.sentences;
      fixture_failed += f.failed_sentences;
    }
    s += fmt::format("| {} | {} | {} | **{}** | {} | **{}** | {:.1f} % |\n", r.options.candidate.name,
                     arithmetic_name(r.options.candidate.arithmetic), r.sweep.size(), sweep_failed, sentences,
                     fixture_failed, 100 * worst);
  }
  s += "\nDetection thresholds (δ), per fixture and fault, for each candidate:\n\n| fixture | fault |";
  std::string rule = "|---|---|";
  for (const CalibrationResult& r : results) {
    s += fmt::format(" {} ({}) |", r.options.candidate.name, arithmetic_name(r.options.candidate.arithmetic));
    rule += "---|";
  }
  s += "\n" + rule + "\n";
  for (const FixtureResult& f : first.fixtures)
    for (GradedFault g : graded_faults()) {
      s += fmt::format("| `{}` | `{}` |", f.name, fault_name(g));
      for (const CalibrationResult& r : results) {
        const auto fixture = std::find_if(r.fixtures.begin(), r.fixtures.end(),
                                          [&](const FixtureResult& x) { return x.dir == f.dir; });
        if (fixture == r.fixtures.end() || !fixture->detection.count(fault_name(g))) {
          s += " — |";
          continue;
        }
        s += fmt::format(" **{}** |", delta_text(CalibrationResult::threshold(
                                          r.options.deltas, fixture->detection.at(fault_name(g)))));
      }
      s += "\n";
    }
  s += "\n(—: not measured; a runtime fault for another implementation.)\n\n";
  for (const CalibrationResult& r : results) s += candidate_section(r);
  s += "\n(killed: the bound used on the sentence that failed, as a multiple of the bound; survived: the largest "
       "bound used over every sentence.)\n";
  write_text_file(file, s);
}

namespace {

nlohmann::ordered_json candidate_json(const CalibrationResult& r) {
  nlohmann::ordered_json j;
  j["candidate"] = r.options.candidate.name;
  j["arithmetic"] = arithmetic_name(r.options.candidate.arithmetic);
  j["false_alarms"] = r.false_alarms();
  j["deltas"] = r.options.deltas;
  auto families = [](const std::map<std::string, FamilyRatios>& fs) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const auto& [name, f] : fs)
      out[name] = {{"tensors", f.ratios.values.size()}, {"max", f.ratios.max()},
                   {"p99", f.ratios.quantile(0.99)}, {"median", f.ratios.quantile(0.5)}, {"floor_binding", f.floored},
                   {"local", {{"tensors", f.local.values.size()}, {"max", f.local.max()}, {"p99", f.local.quantile(0.99)},
                              {"median", f.local.quantile(0.5)}, {"floor_binding", f.local_floored}}}};
    return out;
  };
  j["sweep"] = {{"models", r.sweep.size()}, {"seed", r.options.seed}, {"seconds", r.sweep_seconds},
                {"families", families(r.sweep_families)}};
  for (const SweepResult& m : r.sweep)
    j["sweep"]["results"].push_back({{"seed", m.model.seed}, {"layers", m.model.config.num_hidden_layers},
                                     {"hidden", m.model.config.hidden_size},
                                     {"heads", m.model.config.num_attention_heads},
                                     {"tokens", m.model.input.ids.size()},
                                     {"weight_sd", m.model.statistics.weight_sd},
                                     {"outlier_dims", m.model.statistics.outlier_dims},
                                     {"outlier_gain", m.model.statistics.outlier_gain}, {"pass", m.pass},
                                     {"bound_used", m.worst_bound_used}, {"failure", m.failure}});
  for (const FixtureResult& f : r.fixtures) {
    nlohmann::ordered_json fj = {{"name", f.name}, {"dir", f.dir}, {"sha256", f.sha256}, {"sentences", f.sentences},
                                 {"false_alarms", f.failed_sentences}, {"seconds", f.seconds},
                                 {"families", families(f.families)}};
    for (const auto& [fault, outcomes] : f.detection) {
      nlohmann::ordered_json runs = nlohmann::ordered_json::array();
      for (size_t i = 0; i < outcomes.size(); ++i)
        runs.push_back({{"delta", r.options.deltas[i]}, {"killed", outcomes[i].first}, {"bound_used", outcomes[i].second}});
      fj["detection"][fault] = {{"threshold", CalibrationResult::threshold(r.options.deltas, outcomes)}, {"runs", runs}};
    }
    j["fixtures"].push_back(std::move(fj));
  }
  return j;
}

}  // namespace

void write_calibration_json(const std::vector<CalibrationResult>& results, const std::filesystem::path& file) {
  if (results.empty()) throw std::invalid_argument("no calibration to write");
  nlohmann::ordered_json j;
  j["tool"] = "lenscheck calibrate";
  j["build"] = results.front().version;
  j["oracle_backend"] = results.front().backend;
  j["tolerances_file"] = results.front().tolerances_file;
  j["candidates"] = nlohmann::ordered_json::array();
  for (const CalibrationResult& r : results) j["candidates"].push_back(candidate_json(r));
  write_text_file(file, j.dump(1) + "\n");
}

}  // namespace lenscheck
