#pragma once
// int8 weights. lenscheck's own rule: symmetric per row (a linear layer's output channel, an embedding table's
// token) with zero point 0, scale = max |row| / limit in fp32, each value w / scale rounded half to even.
// quantize_dynamic as `export-onnx --variant int8` writes it, for MatMulInteger, in the reduced range [-64, 64]
// (get_qmin_qmax_for_qType with reduce_range and symmetric int8); weight-only int8 (W8A32: dequantized by
// Cast · scale or DequantizeLinear, fp32 arithmetic) in the full [-127, 127]. One quantizer for the ONNX
// export and the oracle that simulates both. A graph another quantizer wrote (per tensor, with zero points,
// uint8, another range) brings its own integers (QuantizedParams), which the oracle then simulates instead.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/checkpoint.h"

namespace lenscheck {

inline constexpr int kInt8WeightLimit = 64;        // quantize_dynamic
inline constexpr int kWeightOnlyInt8Limit = 127;   // Arithmetic::w8a32

// A weight as its quantizer holds it: W[o, i] ≈ (values[o, i] − zero_points[o]) · scales[o], each value in
// [lowest, highest] (the integer type's range, or the quantizer's narrower one). A per-tensor rule repeats
// its one scale and zero point on every row.
struct QuantizedWeight {
  int64_t out = 0, in = 0;
  std::vector<int32_t> values;       // [out, in], as torch.nn.Linear stores W (an embedding table as it is)
  std::vector<float> scales;         // one per output channel
  std::vector<int32_t> zero_points;  // one per output channel
  int32_t lowest = 0, highest = 0;
};

// `w` is a linear layer's weight [out, in] or an embedding table [rows, hidden]; values in [-limit, limit].
QuantizedWeight quantize_per_channel(const Param& w, int limit);
// The same with one scale for the whole matrix (scale = max |w| / limit), repeated on every row: ONNX Runtime's
// quantize_dynamic with its defaults (per_channel False).
QuantizedWeight quantize_per_tensor(const Param& w, int limit);

// The weights a graph holds quantized, by the checkpoint's parameter names (for_each_param's), each in the
// checkpoint's layout: what a scheme's benchmark computes with in place of its own rule.
using QuantizedParams = std::map<std::string, QuantizedWeight>;

}  // namespace lenscheck
