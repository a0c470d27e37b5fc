#include "harness/compare.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

namespace lenscheck {

bool TraceComparison::pass() const {
  if (!problem.empty() || tensors.empty()) return false;  // comparing nothing proves nothing
  for (const TensorComparison& t : tensors)
    if (!t.pass) return false;
  return true;
}

const TensorComparison* TraceComparison::first_divergence() const {
  for (const TensorComparison& t : tensors)
    if (!t.pass) return &t;
  return nullptr;
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

std::string shape_string(const std::vector<int64_t>& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

TensorComparison compare_tensor(const TensorSpec& spec, const Tensor* cand, const Tensor* ref,
                                const ToleranceSet& tolerances, const Trace& reference) {
  TensorComparison c;
  c.name = spec.name;
  if (const Tolerance* t = tolerances.match(spec.name)) c.tolerance = *t;
  else c.problem = "no tolerance rule matches this tensor";
  if (!ref) c.problem = "missing from the reference trace";
  if (!cand) c.problem = "missing from the candidate trace";
  if (!c.problem.empty()) return c;
  if (ref->shape != spec.shape || cand->shape != spec.shape) {
    c.problem = fmt::format("shape {} vs reference {}, expected {}", shape_string(cand->shape),
                            shape_string(ref->shape), shape_string(spec.shape));
    return c;
  }
  c.elements = ref->numel();
  for (size_t i = 0; i < c.elements; ++i) {
    const double a = cand->values[i], b = ref->values[i];
    double ratio;
    if (!std::isfinite(a) || !std::isfinite(b)) {
      ++c.non_finite;
      ++c.failing;
      c.max_ulp = std::numeric_limits<uint64_t>::max();
      ratio = std::numeric_limits<double>::infinity();
    } else {
      const double diff = std::fabs(a - b), bound = c.tolerance.atol + c.tolerance.rtol * std::fabs(b);
      c.max_abs = std::max(c.max_abs, diff);
      if (b != 0) c.max_rel = std::max(c.max_rel, diff / std::fabs(b));
      c.max_ulp = std::max(c.max_ulp, ulp_distance(a, b));
      if (diff > bound) ++c.failing;
      ratio = bound > 0 ? diff / bound : (diff > 0 ? std::numeric_limits<double>::max() : 0.0);
    }
    if (ratio > c.worst_ratio || i == 0) {
      c.worst_ratio = ratio;
      c.worst = i;
    }
  }
  if (c.elements > 0) {
    c.worst_candidate = cand->values[c.worst];
    c.worst_reference = ref->values[c.worst];
    c.worst_label = element_label(spec.axes, spec.shape, c.worst, reference.tokens);
  }
  c.pass = c.failing == 0 && c.elements > 0;
  if (c.elements == 0) c.problem = "tensor has no elements";
  return c;
}

}  // namespace

TraceComparison compare_traces(const Trace& candidate, const Trace& reference,
                               const ToleranceSet& tolerances, const BertConfig& config) {
  TraceComparison result;
  if (candidate.input_ids != reference.input_ids) {
    result.problem = fmt::format("the traces are of different inputs: {} vs {} tokens, ids differ",
                                 candidate.input_ids.size(), reference.input_ids.size());
    return result;
  }
  const auto schema = trace_schema(config, static_cast<int64_t>(reference.input_ids.size()));
  std::set<std::string> expected;
  for (const TensorSpec& spec : schema) {
    expected.insert(spec.name);
    result.tensors.push_back(compare_tensor(spec, candidate.find(spec.name),
                                            reference.find(spec.name), tolerances, reference));
  }
  // A name on either side that the schema does not know breaks the contract too.
  for (const Trace* side : {&candidate, &reference})
    for (const auto& [name, tensor] : side->tensors)
      if (!expected.count(name)) {
        TensorComparison c;
        c.name = name;
        c.problem = fmt::format("not a tensor of the trace schema (in the {} trace)",
                                side == &candidate ? "candidate" : "reference");
        result.tensors.push_back(c);
        expected.insert(name);
      }
  return result;
}

}  // namespace lenscheck
