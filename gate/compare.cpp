#include "gate/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>

#include "model/safetensors.h"

namespace lenscheck {

bool TraceComparison::pass() const {
  if (!problem.empty() || tensors.empty()) return false;  // comparing nothing proves nothing
  for (const TensorComparison& t : tensors)
    if (!t.pass) return false;
  return true;
}

const TensorComparison* TraceComparison::first_local_failure() const {
  for (const TensorComparison& t : tensors)
    if (t.fails_locally()) return &t;
  return nullptr;
}

const TensorComparison* TraceComparison::first_divergence() const {
  for (const TensorComparison& t : tensors)
    if (!t.pass) return &t;
  return nullptr;
}

std::string local_scope(const TensorComparison& t) {
  if (t.span.through.empty()) return t.name;
  const std::string from = t.span.from.empty() ? "input_ids" : fmt::format("{}", fmt::join(t.span.from, " + "));
  return fmt::format("span {} → {} through {}", from, t.name, fmt::join(t.span.through, ", "));
}

uint64_t ulp_distance(double a, double b) {
  const float fa = static_cast<float>(a), fb = static_cast<float>(b);
  if (!std::isfinite(fa) || !std::isfinite(fb)) return std::numeric_limits<uint64_t>::max();
  // Map float bits onto a line where adjacent floats differ by one (+0 and -0 coincide).
  auto ordered = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, sizeof i);
    return i < 0 ? -static_cast<int64_t>(i & 0x7fffffff) : static_cast<int64_t>(i);
  };
  const int64_t d = ordered(fa) - ordered(fb);
  return static_cast<uint64_t>(d < 0 ? -d : d);
}

std::string element_label(const std::vector<Axis>& axes, const std::vector<int64_t>& shape,
                          size_t flat, const std::vector<std::string>& tokens) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = static_cast<int64_t>(flat % static_cast<size_t>(shape[d]));
    flat /= static_cast<size_t>(shape[d]);
  }
  auto token = [&](int64_t i) {
    return i < static_cast<int64_t>(tokens.size()) ? fmt::format("{}@{}", tokens[size_t(i)], i)
                                                   : fmt::format("t{}", i);
  };
  std::vector<std::string> parts;
  for (size_t d = 0; d < axes.size(); ++d) {
    switch (axes[d]) {
      case Axis::head: parts.push_back(fmt::format("h{}", index[d])); break;
      case Axis::token: parts.push_back(token(index[d])); break;
      case Axis::query: parts.push_back(token(index[d])); break;
      case Axis::key: parts.back() += " → " + token(index[d]); break;
      case Axis::feature: parts.push_back(fmt::format("d{}", index[d])); break;
    }
  }
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

namespace {

// The checks both rules share: a rule applies, every side holds the tensor, in the schema's shape.
// Returns the comparison with `problem` set when the values cannot be compared.
// The first side is the candidate.
using Sides = std::vector<std::pair<std::string, const Tensor*>>;
TensorComparison prepare(const TensorSpec& spec, const ToleranceSet& rules, const Sides& sides) {
  TensorComparison c;
  c.name = spec.name;
  if (const Tolerance* t = rules.match(spec.name)) c.tolerance = *t;
  else c.problem = "no tolerance rule matches this tensor";
  for (const auto& [side, tensor] : sides)
    if (!tensor) c.problem = fmt::format("missing from the {} trace", side);
  if (!c.problem.empty()) return c;
  for (const auto& [side, tensor] : sides)
    if (tensor->shape != spec.shape) {
      c.problem = fmt::format("shape {} in the {} trace, expected {}", shape_string(tensor->shape), side,
                              shape_string(spec.shape));
      return c;
    }
  c.elements = sides.front().second->numel();
  if (c.elements == 0) c.problem = "tensor has no elements";
  return c;
}

// max_abs, max_rel, max_ulp, the worst element and the non-finite count of candidate against
// reference; returns whether every value on both sides is finite.
bool measure(TensorComparison& c, const Tensor& cand, const Tensor& ref, const TensorSpec& spec,
             const Trace& reference) {
  double worst_diff = -1;
  for (size_t i = 0; i < c.elements; ++i) {
    const double a = cand.values[i], b = ref.values[i];
    if (!std::isfinite(a) || !std::isfinite(b)) {
      ++c.non_finite;
      c.max_ulp = std::numeric_limits<uint64_t>::max();
      if (worst_diff < std::numeric_limits<double>::infinity()) c.worst = i;
      worst_diff = std::numeric_limits<double>::infinity();
      continue;
    }
    const double diff = std::fabs(a - b);
    c.max_abs = std::max(c.max_abs, diff);
    if (b != 0) c.max_rel = std::max(c.max_rel, diff / std::fabs(b));
    c.max_ulp = std::max(c.max_ulp, ulp_distance(a, b));
    if (diff > worst_diff) {
      worst_diff = diff;
      c.worst = i;
    }
  }
  c.worst_candidate = cand.values[c.worst];
  c.worst_reference = ref.values[c.worst];
  c.worst_label = element_label(spec.axes, spec.shape, c.worst, reference.tokens);
  return c.non_finite == 0;
}

TensorComparison compare_absolute(const TensorSpec& spec, const Tensor* cand, const Tensor* ref,
                                  const ToleranceSet& rules, const Trace& reference) {
  TensorComparison c = prepare(spec, rules, {{"candidate", cand}, {"reference", ref}});
  if (!c.problem.empty()) return c;
  measure(c, *cand, *ref, spec, reference);
  c.failing = c.non_finite;
  c.bound_used = c.non_finite ? std::numeric_limits<double>::infinity() : 0.0;
  for (size_t i = 0; i < c.elements; ++i) {
    const double a = cand->values[i], b = ref->values[i];
    if (!std::isfinite(a) || !std::isfinite(b)) continue;
    const double diff = std::fabs(a - b), bound = c.tolerance.atol + c.tolerance.rtol * std::fabs(b);
    if (diff > bound) ++c.failing;
    c.bound_used = std::max(c.bound_used, bound > 0 ? diff / bound
                                          : diff > 0 ? std::numeric_limits<double>::infinity() : 0.0);
  }
  c.pass = c.failing == 0;
  return c;
}

double sum_of_squares(const Tensor& t) {
  double sum = 0;
  for (double v : t.values) sum += v * v;
  return sum;
}

// The statistic is normwise, as LAPACK's test ratios are: the root mean square of every element's
// distance from the truth, weighed against |truth| + rms(truth) (relative where the element is large,
// so that a few outlier features, whose rounding error is as large as they are, do not dominate;
// relative to the tensor's scale where it is small). A mean over the tensor is stable where a maximum
// is not: libtorch's largest error on a short sentence is as often lucky as not (fixtures/tolerances.yaml).
// The tensor's scale is the truth's; where the truth is zero throughout (a GELU layer whose inputs
// are all far below zero) the whole truth trace's (`trace_rms`), never the candidate's, whose garbage
// would set its own scale. `candidate` null: not finite, an infinite error. `floor`: the least
// benchmark error counted.
ErrorRatio error_ratio(const Tensor* candidate, const Tensor& truth, const std::vector<const Tensor*>& benchmarks,
                       double trace_rms, double floor) {
  const size_t n = truth.numel();
  double rms = std::sqrt(sum_of_squares(truth) / double(n));
  if (rms == 0) rms = trace_rms;
  auto weighed_rms = [&](const Tensor& t) {
    double sum = 0;
    for (size_t i = 0; i < n; ++i) {
      const double diff = std::fabs(t.values[i] - truth.values[i]);
      // An exact element costs nothing, even where the truth's whole trace is zero (no scale at all).
      const double w = diff == 0 ? 0.0 : diff / (std::fabs(truth.values[i]) + rms);
      sum += w * w;
    }
    return std::sqrt(sum / double(n));
  };
  ErrorRatio e;
  e.candidate_error = candidate ? weighed_rms(*candidate) : std::numeric_limits<double>::infinity();
  for (const Tensor* bench : benchmarks) e.benchmark_error = std::max(e.benchmark_error, weighed_rms(*bench));
  e.floor = rms > 0 ? floor : 0.0;
  const double allowed = std::max(e.benchmark_error, e.floor);
  e.ratio = allowed > 0 ? e.candidate_error / allowed
                        : e.candidate_error > 0 ? std::numeric_limits<double>::infinity() : 0.0;
  return e;
}

double trace_rms_of(const Trace& truth) {
  double square_sum = 0;
  size_t count = 0;
  for (const auto& [name, t] : truth.tensors) {
    square_sum += sum_of_squares(t);
    count += t.numel();
  }
  return count ? std::sqrt(square_sum / double(count)) : 0.0;
}

// `sides`: the candidate, the fp64 truth, then the benchmarks.
TensorComparison compare_to_truth(const TensorSpec& spec, const Sides& sides, double trace_rms,
                                  const Tolerances& tolerances, const Trace& reference) {
  TensorComparison c = prepare(spec, tolerances.derived, sides);
  if (!c.problem.empty()) return c;
  const Tensor *cand = sides[0].second, *truth = sides[1].second;
  const Sides references(sides.begin() + 1, sides.end());
  // The truth and the benchmarks must be finite, or there is nothing to measure the candidate by.
  for (const auto& [side, t] : references)
    for (double v : t->values)
      if (!std::isfinite(v)) {
        c.problem = fmt::format("the {} has NaN or Inf in this tensor: nothing to judge it by", side);
        return c;
      }
  const bool finite = measure(c, *cand, *truth, spec, reference);
  std::vector<const Tensor*> benchmarks;
  for (auto bench = references.begin() + 1; bench != references.end(); ++bench) benchmarks.push_back(bench->second);
  const ErrorRatio e = error_ratio(finite ? cand : nullptr, *truth, benchmarks, trace_rms,
                                   tolerances.floor * FLT_EPSILON);
  c.bound_used = e.ratio / c.tolerance.k;
  c.failing = finite ? (e.ratio > c.tolerance.k ? c.elements : 0) : c.non_finite;
  c.derived = e;
  c.pass = finite && e.ratio <= c.tolerance.k;
  return c;
}

// Runs `compare_one` over the schema but `unreachable`, then fails every name either side holds that the
// schema lacks.
TraceComparison compare_schema(const std::vector<const Trace*>& traces, const BertConfig& config,
                               const std::set<std::string>& unreachable,
                               const std::function<TensorComparison(const TensorSpec&)>& compare_one) {
  TraceComparison result;
  for (const Trace* t : traces)
    if (t->input_ids != traces.front()->input_ids) {
      result.problem = fmt::format("the traces are of different inputs: {} vs {} tokens, ids differ",
                                   traces.front()->input_ids.size(), t->input_ids.size());
      return result;
    }
  const auto schema = trace_schema(config, static_cast<int64_t>(traces.front()->input_ids.size()));
  std::set<std::string> expected;
  for (const TensorSpec& spec : schema) {
    expected.insert(spec.name);
    if (!unreachable.count(spec.name)) result.tensors.push_back(compare_one(spec));
  }
  for (const Trace* side : traces)
    for (const auto& [name, tensor] : side->tensors)
      if (!expected.count(name)) {
        TensorComparison c;
        c.name = name;
        c.problem = fmt::format("not a tensor of the trace schema (in the {} trace)",
                                side->producer.empty() ? "candidate" : side->producer);
        result.tensors.push_back(c);
        expected.insert(name);
      }
  return result;
}

}  // namespace

TraceComparison compare_traces(const Trace& candidate, const Trace& reference,
                               const ToleranceSet& tolerances, const BertConfig& config,
                               const std::set<std::string>& unreachable) {
  return compare_schema({&candidate, &reference}, config, unreachable, [&](const TensorSpec& spec) {
    return compare_absolute(spec, candidate.find(spec.name), reference.find(spec.name), tolerances, reference);
  });
}

TraceComparison compare_derived(const Trace& candidate, const std::vector<const Trace*>& benchmarks,
                                const Trace& truth, const Tolerances& tolerances, const BertConfig& config,
                                const std::set<std::string>& unreachable) {
  std::vector<const Trace*> all = {&candidate, &truth};
  all.insert(all.end(), benchmarks.begin(), benchmarks.end());
  const double trace_rms = trace_rms_of(truth);
  return compare_schema(all, config, unreachable, [&](const TensorSpec& spec) {
    Sides sides = {{"candidate", candidate.find(spec.name)}, {"fp64 oracle", truth.find(spec.name)}};
    for (const Trace* b : benchmarks)
      sides.emplace_back(b->producer.empty() ? "benchmark" : b->producer, b->find(spec.name));
    return compare_to_truth(spec, sides, trace_rms, tolerances, truth);
  });
}

void judge_locally(TraceComparison& comparison, const Trace& candidate, const Trace& exact,
                   const std::vector<const Trace*>& spread, const Tolerances& tolerances, const Scheme& scheme,
                   const std::map<std::string, TraceSpan>& spans) {
  const FloatFormat& stored = scheme.stored;
  const double trace_rms = trace_rms_of(exact);
  for (TensorComparison& c : comparison.tensors) {
    const Tensor* truth = exact.find(c.name);
    const Tensor* cand = candidate.find(c.name);
    if (!truth || !cand || !c.problem.empty() || cand->shape != truth->shape) continue;
    std::vector<const Tensor*> benchmarks;
    for (const Trace* t : spread)
      if (const Tensor* b = t->find(c.name)) benchmarks.push_back(b);
    // An op whose exact recomputation overflows the format has no local yardstick: judged globally.
    bool references_finite = true;
    for (const Tensor* t : benchmarks)
      for (double v : t->values) references_finite = references_finite && std::isfinite(v);
    for (double v : truth->values) references_finite = references_finite && std::isfinite(v);
    if (!references_finite) continue;
    const bool finite = c.non_finite == 0;
    const double one_flip = tolerances.floor * relative_spacing(stored) / std::sqrt(double(truth->numel()));
    c.local = error_ratio(finite ? cand : nullptr, *truth, benchmarks, trace_rms, one_flip);
    if (const auto s = spans.find(c.name); s != spans.end()) c.span = s->second;
    // Exact, needing no spread: an fp32 run declared bf16 is within k of the spread that another order
    // of summation gives bf16 (flipping some of its roundings), yet none of its values need be bf16's.
    // Not where values flow on in fp32 between casts: there a tensor the graph does not output is the
    // candidate's to derive in any precision (fp16-ort-cpu's residual lens).
    const auto holds_only_stored = [&](const Tensor& t) {
      return std::all_of(t.values.begin(), t.values.end(), [&](double v) { return round_to(stored, v) == v; });
    };
    if (finite && stored.digits < kBinary32.digits && !scheme.fp32_between_casts && holds_only_stored(*truth))
      c.off_format = size_t(std::count_if(cand->values.begin(), cand->values.end(),
                                          [&](double v) { return round_to(stored, v) != v; }));
    const bool local_pass = finite && !c.fails_locally();
    c.bound_used = std::max(c.bound_used, c.local->ratio / c.tolerance.k);
    if (!local_pass) {
      c.failing = finite ? c.elements : c.non_finite;
      c.pass = false;
    }
  }
}

}  // namespace lenscheck
