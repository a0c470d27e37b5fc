#pragma once
// Tensor-by-tensor comparison of a candidate trace, in the schema's order: against the fp64 truth with
// libtorch's fp32 error as the benchmark (the derived rule, the default gate), or against a reference
// trace under absolute tolerances.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gate/tolerances.h"
#include "model/arithmetic.h"
#include "model/config.h"
#include "model/trace.h"

namespace lenscheck {

// What the derived rule measured on one tensor, globally or locally.
// Errors are the root mean square over the tensor of |x - truth| / (|truth| + rms(truth)); the truth is
// the fp64 oracle (global) or the tensor's op recomputed exactly from the candidate's inputs (local).
struct ErrorRatio {
  double candidate_error = 0;  // of the candidate
  double benchmark_error = 0;  // the largest of the benchmarks' (global: libtorch in the scheme, as given
                               // and perturbed; local: the op in fp32 and its probes)
  double floor = 0;            // the least benchmark error counted (global: floor · FLT_EPSILON; local:
                               // one element one step of the stored format)
  double ratio = 0;            // candidate_error / max(benchmark_error, floor): > k fails
};

struct TensorComparison {
  std::string name;
  Tolerance tolerance;       // the rule that applied (pattern empty when none did)
  size_t elements = 0;
  size_t failing = 0;        // elements outside the bound, non-finite ones included (derived: all or none)
  size_t non_finite = 0;     // NaN or Inf on either side
  double max_abs = 0;        // against the reference (the truth, under the derived rule)
  double max_rel = 0;        // |a - b| / |b|, over elements with b != 0
  uint64_t max_ulp = 0;      // in float32 units of least precision
  size_t worst = 0;          // flat index of the element furthest from the reference
  // How much of its bound the tensor uses: > 1 fails. Derived: the larger ratio / k; absolute: the worst
  // element's |a - b| / (atol + rtol |b|).
  double bound_used = 0;
  std::optional<ErrorRatio> derived;  // set under the derived rule: the global verdict
  // The local verdict (derived rule): the tensor recomputed by its one op from the candidate's own inputs
  // in the declared scheme, against that op's own rounding spread; where the candidate lacks an input,
  // by the span of ops from the last tensors it holds (`span`), against the span's spread. Unset where
  // the recomputation is not finite: the tensor is judged globally only.
  std::optional<ErrorRatio> local;
  TraceSpan span;  // of the local reference: `through` empty where its one op read the candidate's inputs
  // Of a tensor the declared scheme stores in a format coarser than fp32 (its recomputation holds only
  // that format's values): the candidate's values that format cannot hold. Any fails locally, whatever the
  // ratio: such a candidate did not compute in the scheme it declares.
  size_t off_format = 0;
  bool fails_locally() const { return local && (!(local->ratio <= tolerance.k) || off_format > 0); }
  double worst_candidate = 0, worst_reference = 0;
  std::string worst_label;   // e.g. "[h1, the → scissors]"
  std::string problem;       // set when the tensor could not be compared at all
  bool pass = false;
};

struct TraceComparison {
  std::vector<TensorComparison> tensors;  // forward order
  std::string problem;                    // set when the traces cannot be compared (other tokens)
  bool pass() const;
  const TensorComparison* first_divergence() const;  // the first failing tensor in forward order
  // The first tensor in forward order that fails locally: the op to blame.
  const TensorComparison* first_local_failure() const;
};

// What the local verdict judged `t` by: "layer.2.output", or its span, "span layer.2.attention.output →
// layer.2.output through layer.2.intermediate".
std::string local_scope(const TensorComparison& t);

// Distance in float32 ULPs between two values rounded to float (0 when equal, max when non-finite).
uint64_t ulp_distance(double a, double b);

// Names the element at `flat` of a tensor with `axes`, using the trace's tokens.
std::string element_label(const std::vector<Axis>& axes, const std::vector<int64_t>& shape,
                          size_t flat, const std::vector<std::string>& tokens);

// Both rules compare every tensor of the schema but those in `unreachable`: tensors the candidate
// declares it cannot give (CandidateRun::unreachable), left out rather than failed as missing.

// The absolute rule: every element within atol + rtol |reference|.
TraceComparison compare_traces(const Trace& candidate, const Trace& reference,
                               const ToleranceSet& tolerances, const BertConfig& config,
                               const std::set<std::string>& unreachable = {});

// The derived rule: per tensor, the candidate's error (ErrorRatio) at most k times the largest of the
// benchmarks' errors, never counted below the floor. Every trace must be of the same input ids.
TraceComparison compare_derived(const Trace& candidate, const std::vector<const Trace*>& benchmarks,
                                const Trace& truth, const Tolerances& tolerances, const BertConfig& config,
                                const std::set<std::string>& unreachable = {});

// The local verdict, added to a derived comparison: each tensor of `exact` (the candidate's op recomputed
// from its own inputs, exactly) against `spread` (the same op in fp32, and its probes), by the same
// statistic and k. The floor is one element of the tensor off by one step of `stored`, the format the
// scheme stores the tensor in: floor · relative_spacing(stored) / sqrt(elements), below which an error
// is a single rounding flipped, not a fault. Where the scheme keeps every value in `stored` (no fp32
// between casts), a candidate's value that `stored` cannot hold fails (TensorComparison::off_format).
// `spans`: the tensors `exact` recomputed through tensors the candidate lacks (TensorComparison::span).
void judge_locally(TraceComparison& comparison, const Trace& candidate, const Trace& exact,
                   const std::vector<const Trace*>& spread, const Tolerances& tolerances, const Scheme& scheme,
                   const std::map<std::string, TraceSpan>& spans = {});

}  // namespace lenscheck
