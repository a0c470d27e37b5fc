#pragma once
// int8 weights, symmetric per row (a linear layer's output channel, an embedding table's token) with zero
// point 0: scale = max |row| / limit in fp32, each value w / scale rounded half to even. quantize_dynamic
// writes them for MatMulInteger in the reduced range [-64, 64] (get_qmin_qmax_for_qType with reduce_range
// and symmetric int8); weight-only int8 graphs (W8A32: dequantized by Cast · scale or DequantizeLinear,
// fp32 arithmetic) in the full [-127, 127]. One quantizer for the ONNX export, the oracle that simulates
// both and the check that a shipped graph's int8 values are the checkpoint's re-quantized.
#include <cstdint>
#include <vector>

#include "model/checkpoint.h"

namespace lenscheck {

inline constexpr int kInt8WeightLimit = 64;        // quantize_dynamic
inline constexpr int kWeightOnlyInt8Limit = 127;   // Arithmetic::w8a32

struct QuantizedWeight {
  int64_t out = 0, in = 0;
  std::vector<int8_t> values;  // [out, in], as torch.nn.Linear stores W (an embedding table as it is)
  std::vector<float> scales;   // one per output channel: W[o, i] ≈ values[o, i] · scales[o]
};

// `w` is a linear layer's weight [out, in] or an embedding table [rows, hidden]; values in [-limit, limit].
QuantizedWeight quantize_per_channel(const Param& w, int limit);

}  // namespace lenscheck
