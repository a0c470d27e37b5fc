#pragma once
// `lenscheck verify`: the runtime, libtorch in fp32 and libtorch in fp64 (the truth) on every sentence,
// compared tensor by tensor; the gate.
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gate/candidate.h"
#include "gate/compare.h"
#include "gate/display.h"
#include "instrument/instrument.h"
#include "common/sentences.h"
#include "gate/tolerances.h"
#include "model/arithmetic.h"
#include "model/checkpoint.h"

namespace lenscheck {

// Error ratios of the derived rule, gathered over sentences, layers or models.
struct Ratios {
  std::vector<double> values;
  double max() const;
  double median() const;             // the mean of the middle two of an even count
  double quantile(double q) const;   // the value at rank q * count, rounded down
};

// One tensor name over every sentence of a comparison.
struct TensorSummary {
  std::string name;
  Tolerance tolerance;
  size_t compared = 0;  // sentences where the tensor was compared
  size_t failed = 0;    // sentences where it failed
  double max_abs = 0, max_rel = 0, bound_used = 0;
  uint64_t max_ulp = 0;
  // Derived rule: the error ratio of every tensor compared (sentences, and layers in a family), and
  // the largest errors of candidate and benchmark against the truth.
  Ratios ratios;
  double candidate_error = 0, benchmark_error = 0;
  // The local verdict: the ratio of every tensor judged locally, by its op or its span; `compared -
  // local.values.size()` were judged globally only (their recomputation was not finite).
  Ratios local;
  std::string worst;    // "sentence-id layer.2.attention.probs[h1, the@1 → scissors@7]"
  std::string problem;  // first problem seen, if any
  bool pass() const { return failed == 0 && compared > 0 && problem.empty(); }
};

std::string rule_name(Rule rule);
// What the derived rule's benchmark is for a declared arithmetic: "libtorch fp32", "libtorch fp16
// (simulated in fp64)".
std::string benchmark_label(Arithmetic arithmetic);

struct ComparisonSummary {
  Rule rule = Rule::derived;
  Arithmetic arithmetic = Arithmetic::fp32;  // what the candidate declared: the benchmark computes in it
  std::string candidate, reference;  // producers: "runtime fp32" vs "oracle fp64" (derived) or "oracle fp32"
  std::vector<TensorSummary> tensors;  // forward order
  std::vector<TensorSummary> families; // the same, with layer indices collapsed to "layer.*."
  bool pass() const;
};

struct SentenceVerdict {
  Sentence sentence;
  std::vector<std::string> tokens;
  TraceComparison gate;  // the candidate (the runtime, or a reference trace) under the rule
  std::vector<DisplayRow> display;  // its wrong and undecidable rows, when a display verdict is asked for
  size_t display_rows = 0;          // the rows compared
};

struct VerifyResult {
  std::string version, backend, model_dir, sentences_file, tolerances_file;
  std::string weights_file, model_sha256;  // the checkpoint's weights file (its name) and that file's SHA-256
  std::vector<std::string> notes;
  std::vector<Unreachable> unreachable;  // tensors the candidate could not give, left out of the gate
  std::vector<std::string> derived;      // tensors lenscheck derived from the candidate's own (CandidateRun::derived)
  std::vector<std::string> weights_differ;  // its parameters that are not the checkpoint's: no sentence judged
  std::vector<SentenceVerdict> sentences;
  ComparisonSummary gate;
  std::optional<DisplayVerdict> display;  // what the instrument shows, compared (VerifyOptions::instrument)
  bool pass() const;                      // the tensor gate, and the display verdict where there is one
};

struct VerifyOptions {
  Rule rule = Rule::derived;
  // The arithmetic the candidate declares (derived rule): its benchmark is libtorch computing in it.
  // Empty: the candidate's own (Candidate::arithmetic; a reference trace what its precision field says).
  std::optional<Arithmetic> arithmetic = std::nullopt;
  unsigned threads = 1;  // sentences in parallel; results do not depend on it
  // Reference traces: every tensor of the schema must be in them, none derived or left out (reference_traces).
  bool require_all = false;
  // What the instrument shows, which the display verdict compares; none: no display verdict. Derived
  // rule only (it reads the fp64 truth).
  const Instrument* instrument = nullptr;
  // Called as sentences are judged (a run of them at a time): how many, of how many. Changes no verdict.
  std::function<void(size_t judged, size_t total)> progress = {};
};

// Judges a candidate on every sentence: it runs them 16 at a time (a subprocess may run each such run at
// once), then each trace is judged tensor by tensor under the scheme options.arithmetic names, or else the
// candidate declares; and what the instrument shows, where options ask for it. The reports' notes are its
// first run's.
VerifyResult verify(const Checkpoint& checkpoint, const Candidate& candidate, const std::vector<Sentence>& sentences,
                    const std::filesystem::path& sentences_file, const Tolerances& tolerances,
                    const VerifyOptions& options);

// Judges a trace written by another implementation, on that trace's input ids: under the derived rule
// against the fp64 oracle, its error measured by libtorch's fp32 error; under the absolute rule
// against the fp32 oracle. `reference` is one trace file, or a directory whose *.safetensors are
// judged in name order, one sentence each.
// Each trace declares its arithmetic in its "precision" metadata (fp64 counts as fp32: the arithmetic
// of the model's own weights); options.arithmetic, when given, overrides what every trace says.
VerifyResult verify_reference(const Checkpoint& checkpoint, const std::filesystem::path& reference,
                              const Tolerances& tolerances, const VerifyOptions& options);

// Rounding probes of the derived rule: libtorch on the model with every parameter moved one step of its
// format, up or down as a seed draws, and every LayerNorm output likewise (oracle.h). The benchmark is the
// largest of libtorch's own error and these runs' distances from the truth: the tensor's sensitivity to
// rounding, which a tie or an ill-conditioned row makes large. One sample of rounding error can be
// lucky, a tensor whose error is one propagated component all the more (a row that a LayerNorm outlier
// makes ill-conditioned; a three-token sentence): the ratio of two such samples has a Cauchy-like tail,
// and the largest of m independent samples raises that tail to the m-th power (fixtures/tolerances.yaml
// has the figures).
inline constexpr int kRoundingProbes = 3;

// One sentence's candidate trace under the rule: the oracles run on its input ids. Under the derived
// rule the benchmark and its probes compute in the candidate's declared arithmetic
// (oracle::Oracle::computing_in); the truth is fp64. The absolute rule is fp32's only.
class Judge {
 public:
  // `quantized`: the candidate's own quantized weights, which the benchmark and the local recomputation
  // read in place of the scheme's rule; `int8_sums`: how its kernel sums int8 products (both
  // oracle::Oracle::computing_in).
  Judge(const Checkpoint& checkpoint, const Tolerances& tolerances, Rule rule,
        Arithmetic arithmetic = Arithmetic::fp32, std::shared_ptr<const QuantizedParams> quantized = nullptr,
        Int8Sums int8_sums = Int8Sums::exact);
  ~Judge();
  // What a candidate is judged by, for one input.
  struct References {
    Trace benchmark;                 // libtorch in the declared arithmetic
    std::vector<Trace> perturbed;    // the same, the kRoundingProbes probes; derived rule only
    std::optional<Trace> truth;      // libtorch fp64, derived rule only
    // The declared arithmetic rounded at the graph's other op boundaries (model/arithmetic.h
    // other_rounding), for the display verdict only; none where the scheme has no such freedom.
    std::optional<Trace> other_rounding;
    std::vector<const Trace*> benchmarks() const;  // the benchmark, then its probes
    // The display verdict's: these and the other rounding, so that its error holds for either execution.
    std::vector<const Trace*> display_benchmarks() const;
  };
  // `display`: with the other rounding, which only the display verdict reads.
  References references(const Encoding& encoding, bool display = false) const;
  // The global verdict against `references`, and under the derived rule the local verdict: every tensor
  // recomputed by its op from the candidate's own inputs in the declared scheme.
  TraceComparison judge(const Trace& candidate, const References& references,
                        const std::set<std::string>& unreachable = {}) const;
  Rule rule() const { return rule_; }
  Arithmetic arithmetic() const { return arithmetic_; }

 private:
  struct Oracles;
  const Checkpoint& checkpoint_;
  const Tolerances& tolerances_;
  Rule rule_;
  Arithmetic arithmetic_;
  std::unique_ptr<Oracles> oracles_;
};

ComparisonSummary summarise(const std::vector<std::pair<std::string, const TraceComparison*>>& runs, Rule rule,
                            Arithmetic arithmetic, std::string candidate, std::string reference);

// "layer.3.attention.probs" -> "layer.*.attention.probs"; other names as they are.
std::string family_of(const std::string& name);

}  // namespace lenscheck
