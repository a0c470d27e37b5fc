#include "model/quantize.h"

#include <algorithm>
#include <cmath>

namespace lenscheck {

namespace {

// Symmetric int8 of `w` [out, in] in [-limit, limit]: a scale per row (`per_row`) or one for the matrix, max |w|
// over its values / limit, each value w / scale rounded half to even (as numpy's rint in ONNX Runtime's quantizer).
QuantizedWeight quantize_symmetric(const Param& w, int limit, bool per_row) {
  QuantizedWeight q;
  q.out = w.shape.at(0);
  q.in = w.shape.at(1);
  q.values.resize(w.values.size());
  q.scales.resize(size_t(q.out));
  q.zero_points.assign(size_t(q.out), 0);
  q.lowest = -limit;
  q.highest = limit;
  const float range = float(limit);
  auto scale_of = [&](const float* first, size_t n) {
    float absmax = 0;
    for (size_t i = 0; i < n; ++i) absmax = std::max(absmax, std::fabs(first[i]));
    return absmax > 0 ? absmax / range : 1.0f;
  };
  const float whole = per_row ? 0.0f : scale_of(w.values.data(), w.values.size());
  for (int64_t o = 0; o < q.out; ++o) {
    const float* row = w.values.data() + o * q.in;
    const float scale = per_row ? scale_of(row, size_t(q.in)) : whole;
    q.scales[size_t(o)] = scale;
    for (int64_t i = 0; i < q.in; ++i)
      q.values[size_t(o * q.in + i)] = int32_t(std::clamp(std::nearbyint(row[i] / scale), -range, range));
  }
  return q;
}

}  // namespace

QuantizedWeight quantize_per_channel(const Param& w, int limit) { return quantize_symmetric(w, limit, true); }

QuantizedWeight quantize_per_tensor(const Param& w, int limit) { return quantize_symmetric(w, limit, false); }

}  // namespace lenscheck
