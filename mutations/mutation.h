#pragma once
// A mutation case, in the manner of llama.cpp's test-backend-ops: a small struct that says what it
// breaks, what it expects, and runs itself, printing its evidence. Each case is one file in
// mutations/cases/ that registers itself with LENSCHECK_MUTATION; nothing else needs editing.
#include <functional>
#include <string>
#include <vector>

#include "common/sentences.h"
#include "audit/study_plan.h"
#include "gate/verify.h"
#include "model/checkpoint.h"
#include "model/trace.h"
#include "instrument/rows.h"
#include "runtime/encoder.h"
#include "runtime/kernels.h"
#include "runtime/stages.h"

namespace lenscheck::mutation {

// One sentence of the mutation run: the oracles' traces are computed once and shared by every case.
struct SentenceRun {
  Sentence sentence;
  Encoding encoding;
  Judge::References references;  // libtorch fp32 and fp64: what every implementation mutant is judged by
  Trace runtime;                  // the unmutated runtime, for the metric cases
};

struct Context {
  const Checkpoint& checkpoint;
  const Judge& judge;  // the gate, under the derived rule
  const runtime::Encoder& runtime;  // the shipped runtime, whose packed weights the runtime faults share
  const std::vector<SentenceRun>& runs;
  const StudyPlan& plan;               // its recorded numbers catch faults in the rows
  const Checkpoint& plan_checkpoint;   // the plan's model
};

enum class Kind { metric, implementation };

// Whether an implementation mutant computes, on this model and these sentences, what the shipped
// runtime computes (up to rounding the gate must accept), decided from the model and the fp64 truth
// before the mutant runs. equivalent: it must survive; ordinary: it must be killed; borderline: the
// truth lies within the condition's stated margin, where fp32 rounding decides, so either verdict is
// accepted and reported as such.
struct Equivalence {
  enum class Verdict { ordinary, equivalent, borderline };
  Verdict verdict = Verdict::ordinary;
  std::string why;  // the condition and the figures it was decided on
};
using EquivalenceCondition = std::function<Equivalence(const Context&)>;
const char* verdict_name(Equivalence::Verdict verdict);  // ordinary, equivalent, borderline

struct Outcome {
  bool caught = false;    // implementation: the gate killed the mutant; metric: the claim held
  std::string by;         // what caught it: a tensor, a recorded number, or the claim checked
  std::string evidence;   // the parameters and numbers to print, caught or not
};

struct Case {
  std::string name = {};
  std::string description = {};
  Kind kind = Kind::implementation;
  // Empty for a mutant that is never equivalent; else the condition under which it is.
  EquivalenceCondition equivalence = {};
  std::function<Outcome(const Context&)> run = {};
};

std::vector<Case>& catalogue();  // in registration order; mutate sorts by kind and name

struct Registrar {
  explicit Registrar(Case c) { catalogue().push_back(std::move(c)); }
};

#define LENSCHECK_MUTATION_CONCAT2(a, b) a##b
#define LENSCHECK_MUTATION_CONCAT(a, b) LENSCHECK_MUTATION_CONCAT2(a, b)
#define LENSCHECK_MUTATION(...) \
  static const ::lenscheck::mutation::Registrar LENSCHECK_MUTATION_CONCAT(registrar_, __COUNTER__)(__VA_ARGS__)

// Building blocks for cases.
// An equivalence whose reason holds on every model: the mutant must always survive.
EquivalenceCondition always_equivalent(std::string because);
// Equivalent where `holds` on the model, else ordinary; `what` says what was checked.
EquivalenceCondition equivalent_where(std::string what, std::function<bool(const Context&)> holds);
// The runtime with the stages `replace` changes (from the shipped ones), compared tensor by tensor
// with the oracle on every sentence.
using runtime::LayerOf;
using runtime::Pass;
using runtime::Stages;
std::function<Outcome(const Context&)> runtime_fault(std::function<void(Stages&)> replace);
// The runtime on weights changed by `edit` (the oracle keeps the checkpoint's).
std::function<Outcome(const Context&)> weights_fault(std::function<void(BertWeights&)> edit);
// The rows changed by `edit` once computed, checked against the plan's recorded numbers.
std::function<Outcome(const Context&)> row_fault(RowEdit edit);
// Compares a mutated runtime trace per sentence with the oracle: the gate's verdict as an Outcome.
Outcome gate(const Context& ctx, const std::function<Trace(const SentenceRun&)>& mutated_runtime);

// For the metric cases: every word row of every head of every layer, under the lens built from the
// runtime's attention and a per-key weight the case chooses (runtime/kernels.h weight_by_key).
struct LensRows {
  std::string sentence;
  std::vector<WordRow> rows;  // layer-major, then head, then word
};
using KeyWeights = std::function<std::vector<float>(const SentenceRun&, int layer)>;  // [H, T]
std::vector<LensRows> lens_rows(const Context& ctx, const KeyWeights& key_weights);
// The same rows read straight from the trace's attention probabilities, without any weighting.
std::vector<LensRows> attention_rows(const Context& ctx);
// Calls `visit` on every pair of corresponding rows; returns how many there were.
size_t for_each_row_pair(const std::vector<LensRows>& a, const std::vector<LensRows>& b,
                         const std::function<void(const std::string& sentence, const WordRow&, const WordRow&)>& visit);
std::vector<float> runtime_norms(const SentenceRun& run, int layer);  // the trace's ‖v‖, [H, T]
bool same_bits(double a, double b);

}  // namespace lenscheck::mutation
