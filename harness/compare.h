#pragma once
// Tensor-by-tensor comparison of a candidate trace with a reference trace, in the schema's order.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/tolerances.h"
#include "model/config.h"
#include "model/trace.h"

namespace lenscheck {

struct TensorComparison {
  std::string name;
  Tolerance tolerance;       // the rule that applied (pattern empty when none did)
  size_t elements = 0;
  size_t failing = 0;        // elements outside the tolerance, non-finite ones included
  size_t non_finite = 0;     // NaN or Inf on either side
  double max_abs = 0;
  double max_rel = 0;        // |a - b| / |b|, over elements with b != 0
  uint64_t max_ulp = 0;      // in float32 units of least precision
  size_t worst = 0;          // flat index of the element nearest to (or furthest past) its bound
  double worst_ratio = 0;    // that element's |a - b| / (atol + rtol |b|): > 1 fails
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
};

// Distance in float32 ULPs between two values rounded to float (0 when equal, max when non-finite).
uint64_t ulp_distance(double a, double b);

// Names the element at `flat` of a tensor with `axes`, using the trace's tokens.
std::string element_label(const std::vector<Axis>& axes, const std::vector<int64_t>& shape,
                          size_t flat, const std::vector<std::string>& tokens);

TraceComparison compare_traces(const Trace& candidate, const Trace& reference,
                               const ToleranceSet& tolerances, const BertConfig& config);

}  // namespace lenscheck
