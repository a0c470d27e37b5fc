#include "model/quantize.h"

#include <algorithm>
#include <cmath>

namespace lenscheck {

QuantizedWeight quantize_per_channel(const Param& w, int limit) {
  QuantizedWeight q;
  q.out = w.shape.at(0);
  q.in = w.shape.at(1);
  q.values.resize(w.values.size());
  q.scales.resize(size_t(q.out));
  const float range = float(limit);
  for (int64_t o = 0; o < q.out; ++o) {
    const float* row = w.values.data() + o * q.in;
    float absmax = 0;
    for (int64_t i = 0; i < q.in; ++i) absmax = std::max(absmax, std::fabs(row[i]));
    const float scale = absmax > 0 ? absmax / range : 1.0f;
    q.scales[size_t(o)] = scale;
    for (int64_t i = 0; i < q.in; ++i)
      q.values[size_t(o * q.in + i)] = static_cast<int8_t>(std::clamp(std::nearbyint(row[i] / scale), -range, range));
  }
  return q;
}

}  // namespace lenscheck
