#pragma once
// int8 weights as ONNX Runtime's quantize_dynamic writes them for MatMulInteger: symmetric per output
// channel in the reduced range [-64, 64] (get_qmin_qmax_for_qType with reduce_range and symmetric int8),
// zero point 0. One quantizer for the ONNX export and for the oracle that simulates it.
#include <cstdint>
#include <vector>

#include "model/checkpoint.h"

namespace lenscheck {

inline constexpr int kInt8WeightLimit = 64;

struct QuantizedWeight {
  int64_t out = 0, in = 0;
  std::vector<int8_t> values;  // [out, in], as torch.nn.Linear stores W
  std::vector<float> scales;   // one per output channel: W[o, i] ≈ values[o, i] · scales[o]
};

// `w` is a linear layer's weight [out, in].
QuantizedWeight quantize_per_channel(const Param& w);

}  // namespace lenscheck
